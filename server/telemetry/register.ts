// Tracing, loaded before the app: `node --import ./server/telemetry/register.ts server/main.ts` (the
// npm scripts do it). The code is ESM, so the instrumentations patch modules through a loader hook
// (import-in-the-middle) registered here, before express, pg or node:http are imported:
//   HTTP (incoming, and outgoing node:http: every role-to-role call, server/http/service-client.ts),
//   Express (routes), pg (every SQL statement), undici (Node's fetch, for the other outgoing calls),
// and W3C trace context is propagated on every outgoing call and read from every incoming one, so a
// deposit is one trace from the cage's route through its SQL, its call to the game role and the
// game's SQL. The spans go to OTEL_EXPORTER_OTLP_ENDPOINT (OTLP over HTTP) when it is set, and are
// dropped otherwise. The spec's spans (withSpan) join the active trace. server/main.ts's
// installTelemetry finds the provider installed and leaves it.
import { register } from 'node:module';
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);

// after the hook: these modules and everything they import are patched
const { registerInstrumentations } = await import('@opentelemetry/instrumentation');
const { HttpInstrumentation } = await import('@opentelemetry/instrumentation-http');
const { ExpressInstrumentation } = await import('@opentelemetry/instrumentation-express');
const { PgInstrumentation } = await import('@opentelemetry/instrumentation-pg');
const { UndiciInstrumentation } = await import('@opentelemetry/instrumentation-undici');
const { installTelemetry } = await import('./index.ts');

await installTelemetry({
  serviceName: process.env.OTEL_SERVICE_NAME || 'poker-platform',
  otlpEndpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
});
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
registerInstrumentations({
  instrumentations: [
    new HttpInstrumentation({
      // health probes and the OTLP exporter's own posts are not traced
      ignoreIncomingRequestHook: (req) => req.url === '/health',
    }),
    new ExpressInstrumentation(),
    // a span per statement, never the values (they carry keys and tokens), and only inside a trace:
    // a statement outside any (a live table's hand boundaries, driven by websocket messages and
    // timers; lease renewals; periodic jobs) would be a trace of one span, and its instrumentation
    // cost the game role about a millisecond of CPU per hand
    new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true }),
    new UndiciInstrumentation(),
  ],
});
