// A TCP proxy on a free loopback port, for fault tests: put it between a process and a
// server (PostgreSQL), then cut() to drop every connection and refuse new ones (as a
// lost network or a stopped server does), and restore() to let connections through again.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections through the proxy right now. */
  readonly open: number;
  /** Drops every connection and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) return void client.destroy();
    const upstream = net.connect(target.port, target.host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const proxy: TcpProxy = {
    port: (server.address() as net.AddressInfo).port,
    get open() {
      return pairs.size;
    },
    cut() {
      down = true;
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
    },
    restore() {
      down = false;
    },
    close() {
      proxy.cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
