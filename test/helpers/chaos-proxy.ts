// A fault-injecting HTTP proxy between two roles: each request to a chosen path is, by a seeded
// draw, passed through, dropped before it reaches the target (the target never sees it), or
// forwarded and its answer lost (the target acted, the caller never hears). The caller cannot tell
// the two failures apart, which is exactly what the seams must survive.
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fate = 'pass' | 'drop' | 'lose_answer';

export interface ChaosProxy {
  url: string;
  /** What happened to each request, by path. */
  counts: Record<string, Record<Fate, number>>;
  /** Sets the fault rates for a path (both 0 = healthy). */
  faults(path: string, rates: { drop: number; loseAnswer: number }): void;
  close(): Promise<void>;
}

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with its seed. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function startChaosProxy(target: () => string, seed: number): Promise<ChaosProxy> {
  const random = seeded(seed);
  const rates = new Map<string, { drop: number; loseAnswer: number }>();
  const counts: ChaosProxy['counts'] = {};
  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const r = rates.get(path) ?? { drop: 0, loseAnswer: 0 };
    const draw = random();
    const fate: Fate = draw < r.drop ? 'drop' : draw < r.drop + r.loseAnswer ? 'lose_answer' : 'pass';
    (counts[path] ??= { pass: 0, drop: 0, lose_answer: 0 })[fate]++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (fate === 'drop') return void res.socket?.destroy();
      const url = new URL(req.url ?? '/', target());
      const upstream = request(url, { method: req.method, headers: { ...req.headers, host: url.host } }, (answer) => {
        const body: Buffer[] = [];
        answer.on('data', (c: Buffer) => body.push(c));
        answer.on('end', () => {
          if (fate === 'lose_answer') return void res.socket?.destroy();
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(Buffer.concat(body));
        });
      });
      upstream.on('error', () => res.socket?.destroy());
      upstream.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    faults: (path, r) => void rates.set(path, r),
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
