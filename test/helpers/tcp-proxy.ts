// A TCP proxy in front of a role (HTTP and websockets alike): every connection is piped to the
// target, and a test can cut them: `cutAfterNextClientData()` forwards the next bytes a client sends
// (a websocket frame: an action, say) and then drops that connection both ways before any answer
// comes back, so the server acted and the client never heard.
import { createConnection, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  url: string;
  /** Connections cut so far. */
  cuts: number;
  cutAfterNextClientData(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  let armed = false;
  const proxy: TcpProxy = {
    url: '',
    cuts: 0,
    cutAfterNextClientData: () => void (armed = true),
    close: () => new Promise<void>((resolve) => {
      for (const [a, b] of pairs) { a.destroy(); b.destroy(); }
      server.close(() => resolve());
    }),
  };
  const server = createServer((client) => {
    const upstream = createConnection({ host: hostname, port: Number(port) });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    let cut = false;
    client.on('data', (chunk: Buffer) => {
      if (cut) return;
      if (!armed) return void upstream.write(chunk);
      armed = false;
      cut = true;
      proxy.cuts += 1;
      // the bytes reach the server (then a FIN: it sees the client go), nothing more reaches the client
      upstream.end(chunk);
      client.destroy();
    });
    upstream.on('data', (chunk: Buffer) => void (cut || client.destroyed || client.write(chunk)));
    // a cut connection's upstream is left to flush and close by itself
    const drop = () => { client.destroy(); if (!cut) upstream.destroy(); };
    client.on('close', drop);
    upstream.on('close', () => { drop(); pairs.delete(pair); });
    client.on('error', drop);
    upstream.on('error', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
