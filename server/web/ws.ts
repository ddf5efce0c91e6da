// The game role's websocket, on the page's own origin: an upgrade to `/api/gw/game/ws` or
// `/api/gw/game/ws/tables/<tableId>` is relayed to the game role's `/ws` (`/ws/tables/<tableId>`)
// byte for byte once the game role accepted it (frames, pings, close codes pass untouched). The
// browser authenticates with a first `auth` message (docs/protocol.md), so no token is in a URL.
// Only the websocket handshake headers go upstream (no cookies). Refusals are the coded JSON answers
// of every HTTP route: 404 for another path, 403 for a page of another origin, 502 when the game
// role cannot be reached, and the game role's own refusal (its status and body) as it is.
import http, { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';

const WS_PATH = /^\/api\/gw\/game(\/ws(?:\/tables\/[^/?#]+)?)$/;
const HANDSHAKE = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol'];

function refuse(socket: Duplex, status: number, error: string) {
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error });
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n`
    + `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** Relays websocket upgrades on `server` to the game role; returns a function that closes every relay. */
export function relayWebsockets(server: Server, deps: { game: () => string | undefined; log: Logger }) {
  const open = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const path = (req.url ?? '').split('?')[0]!;
    const match = WS_PATH.exec(path);
    if (!match || req.method !== 'GET') return refuse(socket, 404, 'not_found');
    // a browser names the page's origin: it must be this host's (a page of another site may not ride
    // a player's connection); clients that are not browsers send none
    const origin = req.headers.origin;
    if (origin !== undefined && (!URL.canParse(origin) || new URL(origin).host !== req.headers.host)) return refuse(socket, 403, 'cross_origin_websocket');
    const base = deps.game();
    if (!base) return refuse(socket, 503, 'upstream_not_configured');
    const headers: Record<string, string> = { connection: 'Upgrade', upgrade: 'websocket' };
    for (const name of HANDSHAKE) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const target = new URL(base);
    const upstream = http.request({ host: target.hostname, port: target.port, path: match[1], method: 'GET', headers, timeout: 10_000 });
    upstream.on('upgrade', (res, upSocket, upHead) => {
      upSocket.on('error', () => socket.destroy());
      socket.on('close', () => upSocket.destroy());
      upSocket.on('close', () => socket.destroy());
      const lines = [`HTTP/1.1 101 Switching Protocols`];
      for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upHead.length) socket.write(upHead);
      if (head.length) upSocket.write(head);
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    upstream.on('response', (res) => {
      // the game role refused the upgrade: its answer as it is (JSON), then close
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8').slice(0, 4096);
        const status = res.statusCode ?? 502;
        if (!socket.writable) return void socket.destroy();
        socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json; charset=utf-8\r\n`
          + `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      });
    });
    upstream.on('timeout', () => upstream.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    upstream.on('error', (err) => {
      deps.log.warn({ err: err.message }, 'websocket relay: the game role could not be reached');
      refuse(socket, 502, 'upstream_unavailable');
    });
    upstream.end();
  });
  return () => {
    for (const s of open) s.destroy();
    open.clear();
  };
}
