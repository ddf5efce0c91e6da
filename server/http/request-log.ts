// One log line per request (pino-http): a request id (the caller's `x-request-id` when it is a sane
// token, else a fresh one, echoed in the response), the method, the path, the status and the latency,
// and the trace id when the request is traced. Levels: 2xx/3xx info; a client's mistake (4xx) info
// too, never an error; a 5xx warn when it is a coded, expected answer (a documented 503 such as
// `idp_not_configured` or `cage_unavailable`), error only when something failed unexpectedly (the
// error handler logs that one with its stack). /health is not logged.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { trace } from '@opentelemetry/api';
import { pinoHttp, type Options } from 'pino-http';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The error handler answered with a code other than internal_error (server/http/errors.ts). */
function coded(res: ServerResponse): boolean {
  const code = (res as ServerResponse & { locals?: { errorCode?: string } }).locals?.errorCode;
  return code !== undefined && code !== 'internal_error';
}

export function requestLog(log: Logger) {
  const options: Options = {
    logger: log,
    genReqId: (req, res) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
      res.setHeader('x-request-id', id);
      return id;
    },
    autoLogging: { ignore: (req) => req.url === '/health' },
    customLogLevel: (_req: IncomingMessage, res: ServerResponse) => {
      if (res.statusCode < 500) return 'info';
      return coded(res) ? 'warn' : 'error';
    },
    // a coded 5xx is an answer, not a failure: no synthetic error object (and no stack) on its line
    customErrorObject: (_req, res, _err, value) => (coded(res) ? { ...value, err: undefined } : value),
    customSuccessMessage: (req, res, responseTime) => `${req.method} ${req.url} ${res.statusCode} ${Math.round(responseTime)} ms`,
    customErrorMessage: (req, res) => `${req.method} ${req.url} ${res.statusCode}`,
    customProps: () => {
      const span = trace.getActiveSpan();
      return span ? { traceId: span.spanContext().traceId } : {};
    },
    // the line names the request; the headers (tokens, keys, cookies) stay out of it
    serializers: {
      req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  };
  return pinoHttp(options);
}
