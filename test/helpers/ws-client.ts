// A websocket client for the live-table tests: sends JSON, collects every message, and waits for
// the next message that matches.
import WebSocket from 'ws';

export interface WsClient {
  messages: Record<string, any>[];
  send(message: Record<string, unknown>): void;
  /** The first message not yet taken by a `next` that matches `match`, waiting up to `timeoutMs`. */
  next(match: (m: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  /** The first untaken message matching `match` already received (taken), or undefined. */
  take(match: (m: Record<string, any>) => boolean): Record<string, any> | undefined;
  /** Marks every message so far as taken: `next` then looks only at what comes after. */
  mark(): void;
  close(): Promise<void>;
}

export async function connect(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
  const ws = new WebSocket(url, { headers });
  const messages: Record<string, any>[] = [];
  const waiters: { match: (m: Record<string, any>) => boolean; resolve: (m: Record<string, any>) => void }[] = [];
  const taken = new Set<Record<string, any>>();
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    messages.push(m);
    for (const w of [...waiters]) {
      if (!taken.has(m) && w.match(m)) {
        waiters.splice(waiters.indexOf(w), 1);
        taken.add(m);
        w.resolve(m);
      }
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    messages,
    send: (m) => ws.send(JSON.stringify(m)),
    mark: () => { for (const m of messages) taken.add(m); },
    take(match) {
      const seen = messages.find((m) => !taken.has(m) && match(m));
      if (seen) taken.add(seen);
      return seen;
    },
    next(match, timeoutMs = 5000) {
      const seen = messages.find((m) => !taken.has(m) && match(m));
      if (seen) {
        taken.add(seen);
        return Promise.resolve(seen);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching message in ${timeoutMs} ms; last: ${JSON.stringify(messages.slice(-3))}`)), timeoutMs);
        waiters.push({
          match,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
    close: () => new Promise<void>((resolve) => {
      if (ws.readyState === ws.CLOSED) return resolve();
      ws.once('close', () => resolve());
      ws.close();
    }),
  };
}
