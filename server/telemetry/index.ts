// Logs (pino, JSON) and spans (@opentelemetry/api). Telemetry never stops the work: exporter
// failures are swallowed by the SDK's processors, and `withSpan` only records, it never throws its own errors.
import { createRequire } from 'node:module';
import { context, trace, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs to stdout, or to `destination` (tests read their lines back). With `pretty` (npm start in
 * development, on a terminal) the lines are rendered by pino-pretty, when it is installed (a dev
 * dependency); JSON otherwise.
 */
export function createLogger(level: string, name = 'poker', destination?: DestinationStream, pretty = false): Logger {
  const options = {
    name,
    level,
    // Secrets never reach a log line, even when a caller logs a whole request or config object.
    redact: {
      paths: [
        'SERVICE_KEY', 'CAGE_RECEIPT_KEY', 'GAME_DEALER_KEY', 'AUTH_JWT_KEY', 'AUTH_SECRET', 'DATABASE_URL', 'password', 'secret',
        'req.headers.authorization', 'req.headers["x-service-key"]', 'req.headers.cookie',
        'headers.authorization', 'headers["x-service-key"]', 'headers.cookie',
      ],
      censor: '[redacted]',
    },
  };
  if (destination) return pino(options, destination);
  if (pretty && prettyInstalled()) return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss.l' } } });
  return pino(options);
}

function prettyInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

let provider: BasicTracerProvider | undefined;
let memoryExporter: InMemorySpanExporter | undefined;

/**
 * Installs the global tracer provider once. With `memory` the spans are kept for tests to read
 * (`finishedSpans()`); with an OTLP endpoint they are exported in batches; otherwise they are dropped.
 */
export async function installTelemetry(options: { serviceName: string; otlpEndpoint?: string; memory?: boolean }) {
  if (provider) return;
  const spanProcessors: SpanProcessor[] = [];
  if (options.memory) {
    memoryExporter = new InMemorySpanExporter();
    spanProcessors.push(new SimpleSpanProcessor(memoryExporter));
  }
  if (options.otlpEndpoint) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  // with nowhere to send them (no exporter), spans are not recorded at all: they keep their ids and
  // the context still propagates, but no span is built only to be dropped (the hook's cost when off)
  provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors,
    ...(spanProcessors.length === 0 ? { sampler: new AlwaysOffSampler() } : {}),
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
}

export async function shutdownTelemetry() {
  const p = provider;
  provider = undefined;
  memoryExporter = undefined;
  if (!p) return;
  try {
    await p.shutdown();
  } catch {
    // telemetry failure never stops the work, shutdown included
  }
  trace.disable();
  context.disable();
}

/** Spans recorded since the last reset (only with `memory: true`). */
export function finishedSpans() {
  return memoryExporter?.getFinishedSpans() ?? [];
}

export function resetSpans() {
  memoryExporter?.reset();
}

export const tracer = () => trace.getTracer('poker-platform');

/**
 * Runs `fn` inside an active span. The span ends when `fn` settles; a thrown error is recorded
 * (with its `code` as `error.code`) and rethrown unchanged.
 */
export async function withSpan<T>(
  name: string, attributes: Attributes, fn: (span: Span) => Promise<T>,
  /** `errorCode`: the code the span records for any failure (a span whose spec names one code). */
  options: { errorCode?: string } = {},
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      const code = options.errorCode ?? errorCode(err);
      if (code) span.setAttribute('error.code', code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * The code a client sees for an error: our business refusals (custom SQLSTATEs, all letters in their
 * class, e.g. `CGNSF`, `AUINV`) carry it as their message; anything else carries it as `code`.
 */
export function errorCode(err: unknown): string | undefined {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code !== 'string') return undefined;
  if (/^[A-Z]{2}[A-Z0-9]{3}$/.test(code) && typeof message === 'string') return message;
  return code;
}
