// The roles' one HTTP client (server/http/service-client.ts) over a kept-alive socket the other side
// closes just as a call takes it: the other role's idle timeout (5 s) racing the call. The live
// benchmark met it as a sit refused cage_unavailable after its roles idled about 6 s (the deposit's
// call from the game to the cage, or the cage's back to the game, reset). Such a request never
// reached a handler, so it is sent once more on a fresh socket; a request reset on a fresh socket
// may have been handled, and is not.
import { afterEach, expect, test } from '@jest/globals';
import net from 'node:net';
import { createServiceClient } from '../../server/http/service-client.ts';

const OK = '{"ok":true}';
const answer = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${OK.length}\r\nconnection: keep-alive\r\n\r\n${OK}`;

/**
 * A server on a real socket: `drop(connection, request)` says whether to reset the connection
 * instead of answering that request (counted from 1 on each connection); requests are counted.
 */
async function server(drop: (connection: number, request: number) => boolean) {
  const seen = { connections: 0, requests: 0 };
  const srv = net.createServer((socket) => {
    sockets.add(socket);
    const connection = ++seen.connections;
    let onThis = 0;
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      // each call is a small POST with a body: a request is complete once its body arrived
      for (;;) {
        const head = text.indexOf('\r\n\r\n');
        if (head < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(text.slice(0, head))?.[1] ?? 0);
        if (text.length < head + 4 + length) return;
        text = text.slice(head + 4 + length);
        seen.requests++;
        if (drop(connection, ++onThis)) return void socket.resetAndDestroy();
        socket.write(answer);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  servers.push(srv);
  return { seen, url: `http://127.0.0.1:${port}` };
}

const servers: net.Server[] = [];
const sockets = new Set<net.Socket>();
afterEach(async () => {
  // the clients' agents keep their sockets open: closed here, or the server's close waits for them
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  for (const s of servers.splice(0)) await new Promise<void>((resolve) => s.close(() => resolve()));
});

test('a call whose kept-alive socket is reset before any answer is sent again on a fresh socket', async () => {
  // the first connection answers its first request, then resets as the second comes (its idle close)
  const s = await server((connection, request) => connection === 1 && request === 2);
  const client = createServiceClient({ baseUrl: () => s.url, serviceKey: 'k', timeoutMs: 5000 });
  expect(await client.post('/first', {})).toMatchObject({ ok: true, status: 200 });
  expect(await client.post('/second', {})).toMatchObject({ ok: true, status: 200, body: { ok: true } });
  expect(s.seen).toEqual({ connections: 2, requests: 3 });
});

test('a call reset on a fresh socket is not sent again (it may have been handled): unreachable', async () => {
  const s = await server(() => true);
  const client = createServiceClient({ baseUrl: () => s.url, serviceKey: 'k', timeoutMs: 5000 });
  expect(await client.post('/once', {})).toMatchObject({ ok: false, status: 0, unreachable: true });
  expect(s.seen).toEqual({ connections: 1, requests: 1 });
});

test('a reused socket reset again on the retry is not tried a third time', async () => {
  // every connection answers its first request only; the retry goes on a fresh socket, which answers
  const s = await server((connection, request) => request === 2 || connection === 2);
  const client = createServiceClient({ baseUrl: () => s.url, serviceKey: 'k', timeoutMs: 5000 });
  expect(await client.post('/first', {})).toMatchObject({ ok: true });
  expect(await client.post('/second', {})).toMatchObject({ ok: false, status: 0, unreachable: true });
  expect(s.seen).toEqual({ connections: 2, requests: 3 });
});
