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
