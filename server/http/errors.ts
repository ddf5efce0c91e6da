// One mapping from errors to HTTP: a coded SQL refusal, a validation failure, a malformed request.
// A client mistake is a 4xx JSON `{ error: code }`; only the unexpected is a 500, and its body
// never carries a stack or a message.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues?: unknown[];
  /** Fields the body carries beside `error` (e.g. a failed intent's `status`). */
  readonly extra?: Record<string, unknown>;
  constructor(status: number, code: string, issues?: unknown[], extra?: Record<string, unknown>) {
    super(code);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.issues = issues;
    this.extra = extra;
  }
}

/** SQLSTATE -> HTTP status. Custom CG* states carry the spec's code as their message. */
export const SQL_STATUS: Record<string, number> = {
  // cage refusals (db/functions/cage/00_refusals.sql)
  CGRID: 400, CGKND: 400, CGMKD: 400, CGATY: 400, CGACS: 400, CGLEG: 400, CGAMT: 400, CGIAM: 400,
  CGUNB: 400, CGMEM: 400, CGBAT: 400, CGRCP: 400, CGBOK: 400, CGBRQ: 400, CGBUY: 400, CGNTW: 400, CGSEA: 400,
  CGACC: 404, CGTNF: 404, CGUNF: 404, CGRNF: 404, CGDNF: 404, CGCNF: 404,
  CGMKM: 409, CGREF: 409, CGSHF: 409, CGRCC: 409, CGIMM: 409, CGFRZ: 409, CGIKR: 409, CGSAS: 409, CGCNC: 409, CGRBD: 409,
  GMSEA: 400, GMBUY: 400, GMCRD: 400, GMHND: 400, GMTBL: 400,
  GMTNF: 404, GMNAT: 404, GMANF: 404, GMHNF: 404, GMAGT: 400,
  CLIAM: 400, CLSEC: 400, CLENV: 400, CLCND: 400, CLCLM: 400,
  CLSNF: 404, CLUNF: 404,
  CLKCI: 409, CLSEX: 409, CLIKR: 409, CLNBG: 409, CLACL: 409, CLLCK: 409, CLAMM: 409, CLGNF: 409,
  CLOFF: 503,
  GMFRZ: 409, GMHIP: 409, GMSTK: 409, GMASE: 409, GMLEV: 409, GMCCN: 409, GMNHP: 409, GMSNL: 409, GMNBU: 409, GMLSE: 409, GMCNB: 409, GMSTN: 409,
  GMPGN: 503,
  CGNSF: 402,
  CGADM: 403, CLADM: 403,
  GMTLR: 429,
  // auth refusals (db/functions/auth/00_refusals.sql)
  AUINR: 403, AUINV: 403, AUCRE: 403,
  AUIRQ: 400, AUIDN: 400, AUADR: 400, AUNRQ: 400, AUKEY: 400, AUSRQ: 400, AURTI: 400, AURTE: 400,
  AUNON: 401,
  AUWNF: 404,
  AUSYB: 409, AUPRI: 409,
  // standard states a client can cause
  '22001': 400, // string_data_right_truncation
  '22003': 400, // numeric_value_out_of_range
  '22P02': 400, // invalid_text_representation
  '22023': 400, // invalid_parameter_value
  '22007': 400, // invalid_datetime_format
  '22008': 400, // datetime_field_overflow
  '22009': 400, // invalid_time_zone_displacement_value
  '22015': 400, // interval_field_overflow
  '22019': 400, // invalid_escape_character
  '22025': 400, // invalid_escape_sequence
  '22021': 400, // character_not_in_repertoire (a NUL byte in text)
  '22P05': 400, // untranslatable_character
  '22032': 400, // invalid_json_text
  '23505': 409, // unique_violation
  '23514': 409, // check_violation
  '42501': 403, // insufficient_privilege
  '40001': 503, // serialization_failure (after retries)
  '40P01': 503, // deadlock_detected (after retries)
  '55P03': 503, // lock_not_available (after retries)
  '57014': 503, // query_canceled (statement timeout)
};

const STANDARD_CODES: Record<string, string> = {
  '22001': 'value_too_long',
  '22003': 'amount_out_of_range',
  '22P02': 'bad_request',
  '22023': 'bad_request',
  '22007': 'invalid_datetime',
  '22008': 'invalid_datetime',
  '22009': 'invalid_datetime',
  '22015': 'invalid_datetime',
  '22019': 'bad_request',
  '22025': 'bad_request',
  '22021': 'invalid_characters',
  '22P05': 'invalid_characters',
  '22032': 'malformed_json',
  '23505': 'conflict',
  '23514': 'constraint_violation',
  '42501': 'forbidden',
  '40001': 'busy_retry',
  '40P01': 'busy_retry',
  '55P03': 'busy_retry',
  '57014': 'timeout',
};

export interface ErrorBody {
  status: number;
  body: { error: string; issues?: unknown[]; [field: string]: unknown };
}

export function zodIssues(error: z.ZodError) {
  return error.issues.map((i) => ({ path: i.path.map(String), message: i.message, code: i.code }));
}

/** Maps any thrown value to the response a client sees. */
export function toErrorBody(err: unknown): ErrorBody {
  if (err instanceof ApiError) {
    return { status: err.status, body: { ...err.extra, error: err.code, ...(err.issues ? { issues: err.issues } : {}) } };
  }
  if (err instanceof z.ZodError) {
    return { status: 400, body: { error: 'validation_failed', issues: zodIssues(err) } };
  }
  const e = err as { code?: unknown; message?: unknown; type?: unknown; status?: unknown; name?: unknown };
  // body-parser errors: malformed JSON, oversize body, wrong charset, a body its encoding does not fit
  if (e.type === 'entity.parse.failed') return { status: 400, body: { error: 'malformed_json' } };
  if (e.type === 'entity.too.large') return { status: 413, body: { error: 'body_too_large' } };
  if (e.type === 'json.too_deep') return { status: 400, body: { error: 'json_too_deep' } };
  // Anything a library marks as the caller's fault (http-errors' 4xx: body-parser, the router's
  // URIError for a parameter that does not decode, a gzip body that is not gzip) stays a coded 4xx.
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return { status: e.status, body: { error: clientErrorCode(e) } };
  }
  if (typeof e.code === 'string' && e.code in SQL_STATUS) {
    const status = SQL_STATUS[e.code]!;
    const code = /^(CG|AU|GM|CL)/.test(e.code) ? String(e.message) : STANDARD_CODES[e.code]!;
    return { status, body: { error: code } };
  }
  return { status: 500, body: { error: 'internal_error' } };
}

const CLIENT_ERROR_TYPES: Record<string, string> = {
  'encoding.unsupported': 'unsupported_content_encoding',
  'charset.unsupported': 'unsupported_charset',
  'request.aborted': 'request_aborted',
  'request.size.invalid': 'body_length_mismatch',
};

function clientErrorCode(e: { type?: unknown; name?: unknown; code?: unknown }): string {
  if (typeof e.type === 'string' && e.type in CLIENT_ERROR_TYPES) return CLIENT_ERROR_TYPES[e.type]!;
  if (e.name === 'URIError') return 'malformed_path';
  if (typeof e.code === 'string' && e.code.startsWith('Z_')) return 'malformed_body'; // zlib
  return 'bad_request';
}

export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const { status, body } = toErrorBody(err);
    if (status >= 500) log.error({ err, method: req.method, path: req.path }, 'request failed');
    else log.debug({ method: req.method, path: req.path, status, error: body.error }, 'request refused');
    if (res.headersSent) return;
    res.status(status).json(body);
  };
}

export const notFound: RequestHandler = (_req, res) => {
  res.status(404).json({ error: 'not_found' });
};
