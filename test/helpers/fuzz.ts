// What the fuzz suites share: the seed (FUZZ_SEED, a fixed default so CI is reproducible), the
// hostile values (fast-check arbitraries), a raw HTTP client that sends paths as written, and the
// check every answer must pass.
import http from 'node:http';
import fc from 'fast-check';

export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261123);
/** Requests per mounted route (HTTP) and messages per type (websocket); bounded for CI. */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 96);

const LONG = 'x'.repeat(5000);

/** Strings that have broken parsers, casts and SQL before. */
export const hostileString = fc.oneof(
  fc.constantFrom(
    '', ' ', 'a\u0000b', '\u0000', '%', '%zz', '0x10', '-1', '1.5', '1e400', '-0', '00', '１２', 'NaN', 'Infinity',
    '__proto__', 'constructor', '../../etc/passwd', "'; drop table game.tables; --", '\u202e\ud83d\ude00',
    '\ud800', 'null', 'true', '[]', '{}', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '9'.repeat(40),
    '00000000-0000-0000-0000-000000000000', 'ÿ', '\r\n', LONG,
  ),
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 16 }),
);

export const hostileNumber = fc.oneof(
  fc.constantFrom(0, -0, -1, 1, 2, 16, 40, 1.5, -1.5, 1e308, -1e308, 2 ** 31, 2 ** 53 + 2, 2 ** 63, Number.MIN_VALUE, 2_147_484, 3601),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Any JSON value, hostile at every level (bounded depth and width). */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'a\u0000')), tie('v'), { maxKeys: 3 }),
  ),
})).v;

/** A body's field: the route's plausible value (to get past the first check) or a hostile one. */
export function fieldValue(plausible: readonly unknown[], plausibleWeight = 1) {
  if (!plausible.length) return hostileJson;
  return fc.oneof({ weight: plausibleWeight, arbitrary: fc.constantFrom(...plausible) }, { weight: 1, arbitrary: hostileJson });
}

/** A path segment as written on the wire: plausible ids, malformed %-escapes, NUL, huge, unicode. */
export function pathSegment(plausible: readonly string[]) {
  return fc.oneof(
    ...(plausible.length ? [fc.constantFrom(...plausible.map(encodeURIComponent))] : []),
    fc.constantFrom('%', '%zz', '%00', 'a%00b', '%E0%A4%A', '%FF', '%C0%AF', '%2F', '..', '.', '%2e%2e', 'x'.repeat(3000), '%25', '-', '%F0%9D%95%8F%E2%80%AE'),
    fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
  );
}

/** encodeURIComponent, except that a lone surrogate goes out as the bytes Node would write for it. */
export function encodeLoose(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return [...Buffer.from(value, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  }
}

export interface RawAnswer {
  status: number;
  text: string;
  contentType: string | undefined;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** One request with the path exactly as given (fetch would normalise dot segments and escapes). */
export function rawRequest(base: string, options: { method: string; path: string; headers: Record<string, string>; body?: Buffer }): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method: options.method, path: options.path, headers: options.headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), contentType: res.headers['content-type'] }));
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer in 30 s: ${options.method} ${options.path.slice(0, 200)}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

export function closeFuzzAgent() {
  agent.destroy();
}

/** Coded 5xx answers the platform documents: not built yet (501), a peer unreachable (502/503/504). */
const CODED_5XX = new Set([501, 502, 503, 504]);

/** Why an answer breaks the contract, or null: no 500, no uncoded 5xx, every error a JSON `error` code, no stack. */
export function contractBreach(answer: RawAnswer, options: { graphql?: boolean } = {}): string | null {
  if (answer.status === 500) return '500';
  if (/\.ts:\d+:\d+|\bat [\w.<>]+ \(|node:internal/.test(answer.text)) return 'stack trace in the body';
  if (answer.status < 400) return null;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `${answer.status} with a body that is not JSON: ${answer.text.slice(0, 80)}`;
  }
  const b = body as { error?: unknown; errors?: unknown };
  // GraphQL's own validation answers carry its `errors` list (GraphQL over HTTP)
  const coded = typeof b?.error === 'string' || (options.graphql === true && Array.isArray(b?.errors));
  if (!coded) return `${answer.status} without a string \`error\``;
  if (answer.status >= 500 && !CODED_5XX.has(answer.status)) return `uncoded ${answer.status}`;
  return null;
}

/** Runs `tasks` with at most `width` in flight. */
export async function inPool<T>(items: readonly T[], width: number, task: (item: T, index: number) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await task(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}
