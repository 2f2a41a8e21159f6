/**
 * A TCP proxy (node:net) between the service and a server, that a test can pause: while
 * paused it forwards nothing in either direction and new connections wait, so the server
 * looks stalled (not down: no reset, no refusal), the worst case for a client's timeouts.
 * `reset()` instead ends every open connection with a reset, as a server restart does.
 * `delay(ms)` makes the server slow instead (not stalled): each of its answers reaches the
 * client `ms` late, in order.
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  pause(): void;
  resume(): void;
  /** Reset every open connection (new ones are still forwarded). */
  reset(): void;
  /** Hold everything the server sends for `ms` before passing it on (0: forward at once again). */
  delay(ms: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let paused = false;
  let delayMs = 0;
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
    upstream.on('data', (d) => toClient(d));
    // The server's bytes, each with the time it may be passed on: written in order, never overtaken.
    const held: Array<{ at: number; data: Buffer }> = [];
    let timer: NodeJS.Timeout | null = null;
    const pump = () => {
      timer = null;
      while (held.length > 0 && held[0]!.at <= Date.now()) pair.client.write(held.shift()!.data);
      if (held.length > 0) timer = setTimeout(pump, held[0]!.at - Date.now());
    };
    const toClient = (data: Buffer) => {
      if (delayMs === 0 && held.length === 0) return void pair.client.write(data);
      held.push({ at: Date.now() + delayMs, data });
      if (timer === null) timer = setTimeout(pump, Math.max(0, held[0]!.at - Date.now()));
    };
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
    delay(ms: number) {
      delayMs = ms;
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
