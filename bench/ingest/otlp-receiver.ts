/**
 * `npm run bench -- --tracing otlp`: a stand-in OTLP/HTTP collector in the bench process.
 * The nodes export their spans to it (OTEL_TRACES_EXPORTER=otlp, the default protobuf); it
 * reads each export whole and answers 200, counting exports and bytes, so the nodes pay
 * for building and sending their spans as they would against a real collector on the host.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpReceiver {
  /** The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  stats(): { exports: number; bytes: number };
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats: () => ({ exports, bytes }),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
