/**
 * A tenant's webhook endpoint for tests: a real HTTP server on 127.0.0.1 that records every
 * delivery (headers and raw body, in arrival order) and answers with the statuses it is told
 * (then 200). Signatures are checked by the test with `standardwebhooks`' own `Webhook.verify`.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Statuses for the next requests, in order; 200 once they are used up. */
  answers: number[];
  /** The body of each delivery answered 2xx, parsed, verified with `secret` first. */
  delivered(secret: string): Array<{ webhook_id: string; changes: Array<{ cursor: string }>; next_cursor: string }>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const answers: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = answers.shift() ?? 200;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'not now');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answers,
    delivered(secret) {
      const wh = new Webhook(secret);
      return received
        .filter((r) => r.status < 300)
        .map((r) => wh.verify(r.body, r.headers as Record<string, string>) as ReturnType<Receiver['delivered']>[0]);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
