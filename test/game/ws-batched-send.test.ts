// The game's websocket frames a step's messages itself and writes them at once (ws.ts,
// batchedSend): a real ws client must read each of them as ws's own send would have framed it,
// whatever its length (the three header sizes) and characters, in order; nothing goes to a
// connection that is no longer open.
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { batchedSend } from '../../server/game/live/ws.ts';

let server: WebSocketServer;
beforeAll(async () => {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((r) => server.once('listening', r));
});
afterAll(() => new Promise((r) => server.close(r)));

/** A client connected to the server, and the server's end of it. */
async function pair(): Promise<{ client: WebSocket; end: WebSocket; received: string[] }> {
  const accepted = new Promise<WebSocket>((r) => server.once('connection', r));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const received: string[] = [];
  client.on('message', (data, isBinary) => received.push(isBinary ? '(binary)' : data.toString()));
  await new Promise((r) => client.once('open', r));
  return { client, end: await accepted, received };
}

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
};

test('one step\'s messages, of every header size and any characters, arrive whole and in order, in one write', async () => {
  const { client, end, received } = await pair();
  const writes: number[] = [];
  const socket = (end as unknown as { _socket: { write: (b: Buffer) => boolean } })._socket;
  const write = socket.write.bind(socket);
  socket.write = (b: Buffer) => {
    writes.push(b.length);
    return write(b);
  };
  let flushed = 0;
  const send = batchedSend(end, () => flushed++);
  const messages = ['', 'a', 'x'.repeat(125), 'é'.repeat(63), 'y'.repeat(126), '€🂡'.repeat(5000), 'z'.repeat(65535), 'w'.repeat(65536), JSON.stringify({ type: 'game_state', seats: ['ü', null] })];
  for (const m of messages) send(m);
  expect(writes).toEqual([]); // nothing before the step's end
  await until(() => received.length >= messages.length);
  expect(received).toEqual(messages);
  expect(writes.length).toBe(1);
  expect(flushed).toBe(1);
  // a second step: its own write
  send('next');
  await until(() => received.length > messages.length);
  expect(received.at(-1)).toBe('next');
  expect(writes.length).toBe(2);
  client.close();
});

test('a connection closing gets nothing more (as ws\'s send drops it)', async () => {
  const { client, end, received } = await pair();
  const send = batchedSend(end, () => undefined);
  send('before close');
  end.close(1000, 'bye'); // closing before the step's end: the pending message is dropped, the close frame stands
  send('after close');
  const code = await new Promise<number>((r) => client.once('close', (c) => r(c)));
  expect(code).toBe(1000);
  expect(received).toEqual([]);
});
