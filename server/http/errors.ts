// One mapping from errors to HTTP: a coded SQL refusal, a validation failure, a malformed request.
// A client mistake is a 4xx JSON `{ error: code }`; only the unexpected is a 500, and its body
// never carries a stack or a message.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

/**
 * The refusal registry (db/refusals.json): SQLSTATE -> the code and its HTTP status, for every
 * business refusal the domains' SQL raises. Declared once there; the SQL refuse() reads the same file
 * (loaded into poker_refusals.codes by the migrator).
 */
export const REFUSALS: ReadonlyMap<string, { domain: string; code: string; status: number }> = (() => {
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db/refusals.json');
  const registry = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, [string, number]> | string>;
  const byState = new Map<string, { domain: string; code: string; status: number }>();
  for (const [domain, codes] of Object.entries(registry)) {
    if (typeof codes === 'string') continue; // the file's comment
    for (const [code, [state, status]] of Object.entries(codes)) byState.set(state, { domain, code, status });
  }
  return byState;
})();

/**
 * Whether an error is the refusal `code` of `domain`, as db/refusals.json declares it: code paths
 * name a refusal by its code, never by its SQLSTATE.
 */
export function refusedWith(err: unknown, domain: 'auth' | 'cage' | 'claims' | 'game' | 'betting' | 'bank', code: string): boolean {
  const state = (err as { code?: unknown } | null)?.code;
  const refusal = typeof state === 'string' ? REFUSALS.get(state) : undefined;
  return refusal?.domain === domain && refusal.code === code;
}

/**
 * The SQLSTATE db/refusals.json gives the refusal `code` of `domain`: for a refusal TypeScript raises
 * in SQL's place (the same code reaches the caller whichever side refused).
 */
export function refusalState(domain: 'auth' | 'cage' | 'claims' | 'game' | 'betting' | 'bank', code: string): string {
  for (const [state, r] of REFUSALS) if (r.domain === domain && r.code === code) return state;
  throw new Error(`no refusal ${domain}/${code} in db/refusals.json`);
}

/** SQLSTATE -> HTTP status for the standard states a client can cause (the refusals are in REFUSALS). */
export const SQL_STATUS: Record<string, number> = {
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

/** A request's body, query or params judged by its schema: the parsed value, or 400 bad_request with the issues. */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  return parsed.data;
}

/**
 * The spec gives some refusals as sentences (`{ error: 'invalid signature' }`): the sentence stays
 * the `error`, as the spec shows it, and a code sits beside it (`code`), so every refusal carries one.
 */
const SENTENCE_CODES: Record<string, string> = {
  'invalid walletAddress': 'invalid_wallet_address',
  'no nonce': 'no_nonce',
  'invalid signature': 'invalid_signature',
  'message does not contain issued nonce': 'nonce_not_in_message',
  'not signed in': 'not_signed_in',
  'invalid message': 'invalid_message',
  'wallet already linked to another account': 'wallet_already_linked',
};
export const codeOfSentence = (sentence: string) =>
  SENTENCE_CODES[sentence] ?? sentence.toLowerCase().replace(/'[^']*'/g, '').replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
const coded = (body: ErrorBody['body']): ErrorBody['body'] =>
  (body.code === undefined && /\s/.test(body.error) ? { ...body, code: codeOfSentence(body.error) } : body);

/** Maps any thrown value to the response a client sees. */
export function toErrorBody(err: unknown): ErrorBody {
  const answer = rawErrorBody(err);
  return { status: answer.status, body: coded(answer.body) };
}

function rawErrorBody(err: unknown): ErrorBody {
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
  if (typeof e.code === 'string') {
    const refusal = REFUSALS.get(e.code);
    if (refusal) return { status: refusal.status, body: { error: refusal.code } };
    if (e.code in SQL_STATUS) return { status: SQL_STATUS[e.code]!, body: { error: STANDARD_CODES[e.code]! } };
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
    // an expected, coded answer (a 4xx, a documented 503) is the request log's line, without a
    // stack; only an unexpected failure is an error with its stack
    res.locals.errorCode = body.error;
    if (status >= 500 && body.error === 'internal_error') log.error({ err, method: req.method, path: req.path }, 'request failed');
    else log.debug({ method: req.method, path: req.path, status, error: body.error }, 'request refused');
    if (res.headersSent) return;
    res.status(status).json(body);
  };
}

export const notFound: RequestHandler = (_req, res) => {
  res.status(404).json({ error: 'not_found' });
};
