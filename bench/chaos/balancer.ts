/**
 * The load balancer GitHub's deliveries reach (as an Ingress would): round robin over the
 * nodes that are up, the next one tried when a node refuses the connection, 502 when none
 * answers. The fake GitHub records that 502 as a failed delivery.
 */
import { createServer, request, type Server } from 'node:http';

export interface Balancer {
  url: string;
  close(): Promise<void>;
}

export async function startBalancer(backends: () => string[]): Promise<Balancer> {
  let next = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const urls = backends();
    for (let i = 0; i < urls.length; i++) {
      const target = new URL(req.url ?? '/', urls[(next + i) % urls.length]);
      const answered = await new Promise<boolean>((resolve) => {
        const up = request(target, { method: req.method, headers: req.headers, timeout: 15_000 }, (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
          r.on('end', () => resolve(true));
          r.on('error', () => {
            res.destroy();
            resolve(true);
          });
        });
        up.on('error', () => {
          // Mid-answer failure: the sender sees a broken connection (GitHub records status 0).
          if (res.headersSent) res.destroy();
          resolve(res.headersSent);
        });
        up.on('timeout', () => up.destroy());
        up.end(body);
      });
      if (answered) {
        next = (next + i + 1) % Math.max(1, urls.length);
        return;
      }
    }
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('no backend answered');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
