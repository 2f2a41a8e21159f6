/**
 * A TCP proxy (node:net) between the service and a server, that a test can pause: while
 * paused it forwards nothing in either direction and new connections wait, so the server
 * looks stalled (not down: no reset, no refusal), the worst case for a client's timeouts.
 * `reset()` instead ends every open connection with a reset, as a server restart does.
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  pause(): void;
  resume(): void;
  /** Reset every open connection (new ones are still forwarded). */
  reset(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let paused = false;
  const pairs = new Set<{ client: Socket; upstream: Socket | null }>();
  const waiting: Array<() => void> = [];

  const link = (pair: { client: Socket; upstream: Socket | null }) => {
    const upstream = connect(targetPort, targetHost);
    pair.upstream = upstream;
    const end = () => {
      pair.client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    pair.client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => pair.client.write(d));
    pair.client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
    if (paused) {
      pair.client.pause();
      upstream.pause();
    }
  };

  const server: Server = createServer((client) => {
    const pair = { client, upstream: null as Socket | null };
    pairs.add(pair);
    client.on('error', () => client.destroy());
    if (paused) {
      client.pause();
      waiting.push(() => link(pair));
    } else link(pair);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    pause() {
      paused = true;
      for (const p of pairs) {
        p.client.pause();
        p.upstream?.pause();
      }
    },
    resume() {
      paused = false;
      for (const p of pairs) {
        p.client.resume();
        p.upstream?.resume();
      }
      for (const go of waiting.splice(0)) go();
    },
    reset() {
      for (const p of pairs) {
        p.client.resetAndDestroy();
        p.upstream?.destroy();
      }
    },
    async close() {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream?.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
