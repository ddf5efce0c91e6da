// With nowhere to send spans (no OTLP endpoint, no in-memory exporter: `npm start` by default), the
// tracer records nothing: spans still carry valid ids and the context still propagates (a child has
// its parent's trace), but none is built only to be dropped.
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { installTelemetry, shutdownTelemetry, tracer, withSpan } from '../../server/telemetry/index.ts';

afterAll(async () => {
  await shutdownTelemetry();
});

test('no exporter: spans are not recorded, keep valid ids, and a child joins its parent\'s trace', async () => {
  await installTelemetry({ serviceName: 'no-exporter-test' });
  const seen: { recording: boolean; valid: boolean; traceId: string; parentTrace?: string }[] = [];
  await withSpan('outer', {}, async (outer) => {
    const child = tracer().startSpan('inner');
    const active = trace.getActiveSpan();
    seen.push({ recording: outer.isRecording(), valid: isSpanContextValid(outer.spanContext()), traceId: outer.spanContext().traceId });
    seen.push({ recording: child.isRecording(), valid: isSpanContextValid(child.spanContext()), traceId: child.spanContext().traceId, parentTrace: active?.spanContext().traceId });
    child.end();
  });
  expect(seen[0]).toMatchObject({ recording: false, valid: true });
  expect(seen[1]).toMatchObject({ recording: false, valid: true, traceId: seen[0]!.traceId, parentTrace: seen[0]!.traceId });
});
