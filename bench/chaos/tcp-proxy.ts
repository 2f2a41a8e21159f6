/**
 * A TCP proxy in front of Postgres that can stall: while paused, bytes already on their
 * way are held in both directions and new connections wait, exactly like a database that
 * stopped answering (no reset, no error), until `resume()`. Or it can cut: every connection
 * reset and new ones refused until `resume()`, like a database that restarted (a failover).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface StallingProxy {
  port: number;
  pause(): void;
  /** Reset every connection and refuse new ones until `resume()`. */
  cut(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startStallingProxy(target: { host: string; port: number }): Promise<StallingProxy> {
  let paused = false;
  let cut = false;
  const pairs = new Set<[Socket, Socket]>();
  const waiting: Array<() => void> = [];
  const server: Server = createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const connect = () => {
      const upstream = createConnection(target);
      const pair: [Socket, Socket] = [client, upstream];
      pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      const end = () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    };
    if (paused) {
      client.pause();
      waiting.push(() => {
        client.resume();
        connect();
      });
    } else connect();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    pause() {
      paused = true;
      for (const [a, b] of pairs) {
        a.pause();
        b.pause();
      }
    },
    cut() {
      cut = true;
      for (const [a, b] of pairs) {
        a.resetAndDestroy();
        b.destroy();
      }
    },
    resume() {
      paused = false;
      cut = false;
      for (const [a, b] of pairs) {
        a.resume();
        b.resume();
      }
      for (const go of waiting.splice(0)) go();
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
