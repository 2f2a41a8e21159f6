/**
 * The comparison baseline of the ingest benchmark: the least a webhook edge can do and
 * still be correct, per route. GitHub: a Fastify route that checks `X-Hub-Signature-256`
 * on the raw bytes and answers 202 only after one JetStream publish was acknowledged (same
 * stream settings as the service's ingest stream: file storage, work queue, duplicate
 * window), the delivery id as `Nats-Msg-Id`. Slack: the same on the events path with
 * Slack's v0 signature (timestamp within 5 minutes, HMAC of `v0:{ts}:{raw body}`,
 * INTERFACE §3), answering 200; Slack carries its event id in the body only, so this one
 * parses the JSON once to take it as `Nats-Msg-Id` (retries deduplicated). No tenant
 * lookup, no normalisation, no consumer. Run as its own process by bench/ingest.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import Fastify from 'fastify';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { names as makeNames } from '../../src/runtime/names.js';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`baseline-server: ${name} is required`);
  return v;
}

const secret = need('CODEHOST_WEBHOOK_SECRET');
const slackSecret = need('CHATAPP_SIGNING_SECRET');
const names = makeNames(need('SERVICE_NAMESPACE'));
const nc = await connect({ servers: need('NATS_URL'), name: 'bench-baseline' });
// Nothing consumes the baseline's stream: 60 s runs of both routes passed the service's 1 GiB
// default and were refused (503s counted as non-2xx). A larger limit costs nothing per publish.
await ensureIngestStream(await jetstreamManager(nc), names, { maxBytes: 16 * 1024 ** 3 });
const js = jetstream(nc);
const subject = names.ingestSubject(0, 'codehost', 'baseline');
const slackSubject = names.ingestSubject(0, 'chatapp', 'baseline');

function sameSecret(given: string, want: string): boolean {
  const [g, w] = [Buffer.from(given), Buffer.from(want)];
  return g.length === w.length && timingSafeEqual(g, w);
}

const app = Fastify({ logger: false, bodyLimit: 25 * 1024 * 1024 });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

app.get('/healthz', async () => ({ ok: true }));
app.post('/api/v1/connectors/codehost/webhooks', async (req, reply) => {
  const raw = req.body as Buffer;
  const want = `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
  if (!sameSecret(String(req.headers['x-hub-signature-256'] ?? ''), want))
    return reply.code(401).send({ error: { code: 'unauthorized', message: 'bad signature' } });
  const delivery = String(req.headers['x-github-delivery'] ?? '');
  await js.publish(subject, raw, { msgID: delivery });
  return reply.code(202).send({ ok: true });
});
app.post('/api/v1/connectors/chatapp/events', async (req, reply) => {
  const raw = req.body as Buffer;
  const ts = String(req.headers['x-slack-request-timestamp'] ?? '');
  const fresh = /^\d{1,12}$/.test(ts) && Math.abs(Date.now() / 1000 - Number(ts)) <= 300;
  const want = `v0=${createHmac('sha256', slackSecret).update(`v0:${ts}:`).update(raw).digest('hex')}`;
  if (!fresh || !sameSecret(String(req.headers['x-slack-signature'] ?? ''), want))
    return reply.code(401).send({ error: { code: 'unauthorized', message: 'bad signature' } });
  const eventId = (JSON.parse(raw.toString('utf8')) as { event_id?: unknown }).event_id;
  await js.publish(slackSubject, raw, { msgID: typeof eventId === 'string' ? eventId : '' });
  return reply.code(200).send({ ok: true });
});

const url = await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(need('PORT')) });
process.stdout.write(`${JSON.stringify({ ready: url })}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => nc.drain())
    .finally(() => process.exit(0));
});
