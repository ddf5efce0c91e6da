// Spans through @opentelemetry/api, read back from the in-memory exporter; logs without secrets.
import { SpanStatusCode } from '@opentelemetry/api';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry, withSpan } from '../../server/telemetry/index.ts';
import { captureLogger } from '../helpers/logs.ts';

beforeAll(async () => {
  await installTelemetry({ serviceName: 'telemetry-test', memory: true });
});
afterAll(async () => {
  await shutdownTelemetry();
});
beforeEach(() => resetSpans());

test('withSpan records one span with its attributes and returns what the work returned', async () => {
  const result = await withSpan('admin.tables.create', { 'table.id': 't1' }, async (span) => {
    span.setAttribute('result', 'created');
    return 42;
  });
  expect(result).toBe(42);
  const spans = finishedSpans();
  expect(spans.map((s) => s.name)).toEqual(['admin.tables.create']);
  expect(spans[0]!.attributes).toEqual({ 'table.id': 't1', result: 'created' });
  expect(spans[0]!.status.code).not.toBe(SpanStatusCode.ERROR);
});

test('a coded failure is recorded as error.code and rethrown unchanged', async () => {
  const failure = Object.assign(new Error('invite_mint_failed'), { code: 'invite_mint_failed' });
  await expect(withSpan('auth.invite.mint', {}, async () => { throw failure; })).rejects.toBe(failure);
  const [span] = finishedSpans();
  expect(span!.attributes['error.code']).toBe('invite_mint_failed');
  expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'invite_mint_failed' });
});

test('a business refusal from SQL is recorded by its spec code, not its SQLSTATE', async () => {
  const refusal = Object.assign(new Error('insufficient_cage_balance'), { code: 'CGNSF' });
  await expect(withSpan('cage.post', {}, async () => { throw refusal; })).rejects.toBe(refusal);
  const standard = Object.assign(new Error('deadlock detected'), { code: '40P01' });
  await expect(withSpan('cage.post', {}, async () => { throw standard; })).rejects.toBe(standard);
  expect(finishedSpans().map((s) => s.attributes['error.code'])).toEqual(['insufficient_cage_balance', '40P01']);
});

test('nested spans share one trace', async () => {
  await withSpan('outer', {}, async () => withSpan('inner', {}, async () => undefined));
  const [inner, outer] = finishedSpans();
  expect(inner!.name).toBe('inner');
  expect(inner!.spanContext().traceId).toBe(outer!.spanContext().traceId);
  expect(inner!.parentSpanContext?.spanId).toBe(outer!.spanContext().spanId);
});

test('the logger never writes a secret', () => {
  const { log, lines } = captureLogger('info');
  const secret = 'super-secret-service-key-123';
  log.info({
    SERVICE_KEY: secret,
    DATABASE_URL: `postgres://u:${secret}@h/db`,
    req: { headers: { authorization: `Bearer ${secret}`, 'x-service-key': secret, cookie: `s=${secret}` } },
    password: secret,
  }, 'request');
  expect(lines).toHaveLength(1);
  expect(JSON.stringify(lines[0])).not.toContain(secret);
  expect(lines[0]).toMatchObject({ SERVICE_KEY: '[redacted]', password: '[redacted]' });
});
