/**
 * A rogue NATS client in a process of its own (issue 32, the NATS fence): publishes garbage
 * onto a deployment's ingest subjects as fast as the server takes it, for a while, then
 * prints one JSON line `{"sent", "stored", "refused", "unanswered"}`: what it published, what
 * the stream acknowledged (stored), what it refused (full, discard-new) and what got no answer.
 *
 * Usage: node --import tsx test/support/nats-flood-child.ts <nats-url> <subject-prefix> <shards> <seconds>
 * (`<subject-prefix>`: `<ns>.ingest`). Every publish carries a reply inbox, so the server
 * answers each with a PubAck and none waits for it: full speed, bounded only by the
 * connection (a flush every CHUNK publishes keeps the client's buffer from growing).
 */
import { randomBytes } from 'node:crypto';
import { connect, createInbox, headers } from '@nats-io/transport-node';

const [url, prefix, shardsArg, secondsArg] = process.argv.slice(2);
if (!url || !prefix || !shardsArg || !secondsArg)
  throw new Error('usage: <nats-url> <subject-prefix> <shards> <seconds>');
const shards = Number(shardsArg);
const CHUNK = 500;

const nc = await connect({ servers: url });
const inbox = createInbox();
let stored = 0;
let refused = 0;
const answers = nc.subscribe(inbox, {
  callback: (_err, m) => {
    if (m.string().includes('"error"')) refused++;
    else stored++;
  },
});
const body = randomBytes(200);
// Unsealed, and sealed with a made-up MAC: both must be refused.
const forged = headers();
forged.set('Svc-Seal', randomBytes(32).toString('base64url'));
let sent = 0;
const end = Date.now() + Number(secondsArg) * 1000;
while (Date.now() < end) {
  for (let i = 0; i < CHUNK; i++, sent++) {
    const subject = `${prefix}.${sent % shards}.codehost.forged-${sent % 64}`;
    nc.publish(subject, body, { reply: inbox, ...(sent % 2 === 0 ? { headers: forged } : {}) });
  }
  await nc.flush();
}
// The server answers every publish; a loaded machine may take a while to.
const deadline = Date.now() + 30_000;
while (stored + refused < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
answers.unsubscribe();
process.stdout.write(`${JSON.stringify({ sent, stored, refused, unanswered: sent - stored - refused })}\n`);
await nc.close();
