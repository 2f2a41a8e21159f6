/**
 * A TCP port nobody listens on right now, chosen by the kernel (bind to port 0, read it
 * back, close). There is a window between close and the caller's own bind in which another
 * process could take it; callers that start a child on it must report a bind failure
 * plainly rather than assume the port is still free.
 */
import { createServer } from 'node:net';

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`could not read the port bound on ${host}`));
        return;
      }
      server.close((err) => (err ? reject(err) : resolve(address.port)));
    });
  });
}

/** Starts tried by `againIfPortTaken` before it gives up. */
const PORT_TAKEN_ATTEMPTS = 3;

/**
 * `start` (which picks its ports with `freePort`), and again, up to 3 times, when it fails
 * because another process bound one of them first: the window `freePort` leaves open. Such
 * a failure says "address already in use" (Node's EADDRINUSE and nats-server's fatal line).
 */
export async function againIfPortTaken<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= PORT_TAKEN_ATTEMPTS || !/address already in use/.test((err as Error).message)) throw err;
    }
  }
}
