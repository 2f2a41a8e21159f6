/** Chat events over Socket Mode (spec §5, §6.1; INTERFACE §8.18, §8.20). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageEvent, signedHeaders, FakeSlack } from 'connector-service/testing';
import { allEvents, emit, installOk, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { nextTs, type FakeChannel, type FakeMessage, type FakeTeam } from 'connector-service/testing';
import { ingestOutage } from '../support/ingest-outage.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let chan: FakeChannel;
let tenant: Tenant;
let installId: string;
const logs = new LogCapture();

beforeAll(async () => {
  const slack = await new FakeSlack().start();
  // Socket Mode on with a signing secret also set: Socket Mode wins (INTERFACE §8.18).
  s = await startChatStack({ CHATAPP_USE_SOCKET_MODE: 'true', CHATAPP_APP_TOKEN: slack.appToken }, slack, { logs });
  team = s.slack.addTeam();
  chan = s.slack.addChannel(team.id);
  tenant = await s.node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  await until('socket connected', async () => s.slack.socket.openCount > 0, { timeoutMs: 10_000 });
});
afterAll(() => s?.stop());

const message = (text: string): FakeMessage => ({ ts: nextTs(), user: 'U0HUMAN', text });
const idOf = (m: FakeMessage) => `message:${chan.id}:${m.ts}`;
const ingested = async (id: string) => (await allEvents(s.node.url, tenant, installId)).some((e) => e.id === id);
const storedCount = async (id: string): Promise<number> =>
  (await s.node.pool.query('SELECT count(*)::int AS n FROM events WHERE install_id = $1 AND id = $2', [installId, id]))
    .rows[0].n;

describe('chatapp Socket Mode', () => {
  it('does not mount the HTTP events route', async () => {
    const body = JSON.stringify({ type: 'url_verification', challenge: 'x' });
    const res = await fetch(s.slack.eventsUrl!, {
      method: 'POST',
      headers: signedHeaders(s.slack.signingSecret, body, 'valid'),
      body,
    });
    expect(res.status).toBe(404);
  });

  it('acknowledges each envelope once its event is stored, and ingests it once whatever the retries', async () => {
    const m = message('over the socket');
    const first = await s.slack.socket.push(team.id, messageEvent(team, chan, m), { eventId: 'EvSOCK1' });
    expect(first.acked).toBe(true);
    await until('the socket message ingested', () => ingested(idOf(m)), { timeoutMs: 10_000 });
    for (const retryAttempt of [1, 2, 3]) {
      const again = await s.slack.socket.push(team.id, messageEvent(team, chan, m), {
        eventId: 'EvSOCK1',
        retryAttempt,
      });
      expect(again.acked).toBe(true);
    }
    // An install's events are stored in the order they were acknowledged: once a later one is in, the retries were handled.
    const later = message('after the retries');
    expect((await s.slack.socket.push(team.id, messageEvent(team, chan, later))).acked).toBe(true);
    await until('a later event ingested', () => ingested(idOf(later)), { timeoutMs: 10_000 });
    expect((await allEvents(s.node.url, tenant, installId)).filter((e) => e.id === idOf(m))).toHaveLength(1);
  });

  it('acknowledges and drops events of a team with no active install', async () => {
    const stranger = s.slack.addTeam();
    const c = s.slack.addChannel(stranger.id);
    const res = await s.slack.socket.push(stranger.id, messageEvent(stranger, c, message('nobody')));
    expect(res.acked).toBe(true);
  });

  it('drops our own posted message echoed back over the socket', async () => {
    s.slack.echo = 'socket';
    try {
      const res = await emit(s.node.url, tenant, installId, 'chatapp.message', {
        channel_id: chan.id,
        text: 'echo me',
      });
      expect(res.status).toBe(200);
      const { provider_id: ts } = (await res.json()) as { provider_id: string };
      const after = message('human after the echo');
      await s.slack.socket.push(team.id, messageEvent(team, chan, after));
      await until('control message', () => ingested(idOf(after)), { timeoutMs: 10_000 });
      expect((await allEvents(s.node.url, tenant, installId)).some((e) => e.payload.ts === ts)).toBe(false);
      expect(s.slack.socket.acks.size).toBeGreaterThan(0);
    } finally {
      s.slack.echo = null;
    }
  });

  it('reconnects after the connection drops, through refused attempts, with backoff', async () => {
    const before = s.slack.socket.connections.length;
    const refusedBefore = s.slack.socket.refusals.length;
    s.slack.socket.refuseNext = 1;
    const dropped = Date.now();
    s.slack.socket.drop();
    await until(
      'a new socket connection after the drop',
      async () => s.slack.socket.connections.length > before && s.slack.socket.openCount > 0,
      {
        timeoutMs: 20_000,
      },
    );
    // One attempt refused, then one connection: it kept trying after a failed attempt.
    expect(s.slack.socket.refusals.length - refusedBefore).toBe(1);
    expect(s.slack.socket.connections.length - before).toBe(1);
    expect(s.slack.socket.connections.at(-1)!.openedAt).toBeGreaterThan(s.slack.socket.refusals.at(-1)!);
    // spec §5: backoff from 1 s (full jitter): one refusal and the retry after it wait at most
    // 1 s + 2 s. The one upper bound, wide for a loaded machine; a backoff starting near the 60 s
    // cap would fail it (the jitter itself is unit-tested in chatapp-misc.test.ts).
    expect(s.slack.socket.connections.at(-1)!.openedAt - dropped).toBeLessThan(10_000);
    const m = message('after reconnect');
    expect((await s.slack.socket.push(team.id, messageEvent(team, chan, m))).acked).toBe(true);
    await until('ingested after reconnect', () => ingested(idOf(m)), { timeoutMs: 10_000 });
  });

  it('leaves an envelope unacknowledged when its event cannot be stored; the redelivery is stored once', async () => {
    await until('socket connected', async () => s.slack.socket.openCount > 0, { timeoutMs: 20_000 });
    const m = message('refused by the stream');
    const outage = await ingestOutage(s.node.namespace, 'refuse');
    let sent: { envelopeId: string; acked: Promise<true> };
    try {
      sent = s.slack.socket.send(team.id, messageEvent(team, chan, m), { eventId: 'EvSOCKFAIL' });
      // The node gave up on this envelope (socket-mode.ts): that, not a clock, says the ack is not coming.
      await until(
        'envelope given up',
        async () => logs.find('chat event not stored', LOG_LEVEL.warn).some((l) => l.envelopeId === sent.envelopeId),
        { timeoutMs: 10_000 },
      );
    } finally {
      await outage.restore();
    }
    expect(s.slack.socket.acks.has(sent.envelopeId)).toBe(false);
    // Nothing of it was stored: an event sent after it is ingested, it is not.
    const after = message('after the outage');
    expect((await s.slack.socket.push(team.id, messageEvent(team, chan, after))).acked).toBe(true);
    await until('control message', () => ingested(idOf(after)), { timeoutMs: 10_000 });
    expect(await storedCount(idOf(m))).toBe(0);
    // Slack redelivers the unacknowledged envelope: acknowledged now, and stored once.
    for (const retryAttempt of [1, 2]) {
      const again = await s.slack.socket.push(team.id, messageEvent(team, chan, m), {
        eventId: 'EvSOCKFAIL',
        retryAttempt,
      });
      expect(again.acked).toBe(true);
    }
    await until('redelivery ingested', () => ingested(idOf(m)), { timeoutMs: 10_000 });
    expect(await storedCount(idOf(m))).toBe(1);
    expect(s.slack.socket.acks.has(sent.envelopeId)).toBe(false);
  });
});
