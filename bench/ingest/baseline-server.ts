/**
 * The comparison baseline of the ingest benchmark: the least a webhook edge can do and
 * still be correct. A Fastify route that checks `X-Hub-Signature-256` on the raw bytes and
 * answers 202 only after one JetStream publish was acknowledged (same stream settings as
 * the service's ingest stream: file storage, work queue, 2-minute duplicate window).
 * No tenant lookup, no JSON parse, no consumer. Run as its own process by bench/ingest.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import Fastify from 'fastify';
import { ensureIngestStream } from '../../src/runtime/ingest-stream.js';
import { names as makeNames } from '../../src/runtime/names.js';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`baseline-server: ${name} is required`);
  return v;
}

const secret = need('CODEHOST_WEBHOOK_SECRET');
const names = makeNames(need('SERVICE_NAMESPACE'));
const nc = await connect({ servers: need('NATS_URL'), name: 'bench-baseline' });
await ensureIngestStream(await jetstreamManager(nc), names);
const js = jetstream(nc);
const subject = names.ingestSubject(0, 'codehost', 'baseline');

const app = Fastify({ logger: false, bodyLimit: 25 * 1024 * 1024 });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

app.get('/healthz', async () => ({ ok: true }));
app.post('/api/v1/connectors/codehost/webhooks', async (req, reply) => {
  const raw = req.body as Buffer;
  const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? ''));
  const want = Buffer.from(`sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`);
  if (given.length !== want.length || !timingSafeEqual(given, want))
    return reply.code(401).send({ error: { code: 'unauthorized', message: 'bad signature' } });
  const delivery = String(req.headers['x-github-delivery'] ?? '');
  await js.publish(subject, raw, { msgID: delivery });
  return reply.code(202).send({ ok: true });
});

const url = await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(need('PORT')) });
process.stdout.write(`${JSON.stringify({ ready: url })}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => nc.drain())
    .finally(() => process.exit(0));
});
