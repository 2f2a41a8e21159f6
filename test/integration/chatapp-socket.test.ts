/** Chat events over Socket Mode (issue 4 "Events in"; spec §5; INTERFACE §8.18, §8.20). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageEvent, signedHeaders } from '../fakes/slack-events.js';
import { FakeSlack } from '../fakes/slack-fake.js';
import { allEvents, emit, eventually, installOk, startChatStack, type ChatStack, type Tenant } from '../fakes/slack-harness.js';
import { nextTs, type FakeChannel, type FakeMessage, type FakeTeam } from '../fakes/slack-model.js';

let s: ChatStack;
let team: FakeTeam;
let chan: FakeChannel;
let tenant: Tenant;
let installId: string;

beforeAll(async () => {
  const slack = await new FakeSlack().start();
  // Socket Mode on with a signing secret also set: Socket Mode wins (INTERFACE §8.18).
  s = await startChatStack({ CHATAPP_USE_SOCKET_MODE: 'true', CHATAPP_APP_TOKEN: slack.appToken }, slack);
  team = s.slack.addTeam();
  chan = s.slack.addChannel(team.id);
  tenant = await s.node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  await eventually(async () => s.slack.socket.openCount > 0, 10_000, 'socket connected');
});
afterAll(() => s?.stop());

const message = (text: string): FakeMessage => ({ ts: nextTs(), user: 'U0HUMAN', text });
const idOf = (m: FakeMessage) => `message:${chan.id}:${m.ts}`;
const ingested = async (id: string) => (await allEvents(s.node.url, tenant, installId)).some((e) => e.id === id);

describe('chatapp Socket Mode', () => {
  it('does not mount the HTTP events route', async () => {
    const body = JSON.stringify({ type: 'url_verification', challenge: 'x' });
    const res = await fetch(s.slack.eventsUrl!, { method: 'POST', headers: signedHeaders(s.slack.signingSecret, body, 'valid'), body });
    expect(res.status).toBe(404);
  });

  it('acknowledges each envelope once its event is stored, and ingests it once whatever the retries', async () => {
    const m = message('over the socket');
    const first = await s.slack.socket.push(team.id, messageEvent(team, chan, m), { eventId: 'EvSOCK1' });
    expect(first.acked).toBe(true);
    await eventually(() => ingested(idOf(m)), 10_000, 'ingested');
    for (const retryAttempt of [1, 2, 3]) {
      const again = await s.slack.socket.push(team.id, messageEvent(team, chan, m), { eventId: 'EvSOCK1', retryAttempt });
      expect(again.acked).toBe(true);
    }
    await new Promise((r) => setTimeout(r, 200));
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
      const res = await emit(s.node.url, tenant, installId, 'chatapp.message', { channel_id: chan.id, text: 'echo me' });
      expect(res.status).toBe(200);
      const { provider_id: ts } = (await res.json()) as { provider_id: string };
      const after = message('human after the echo');
      await s.slack.socket.push(team.id, messageEvent(team, chan, after));
      await eventually(() => ingested(idOf(after)), 10_000, 'control message');
      expect((await allEvents(s.node.url, tenant, installId)).some((e) => e.payload.ts === ts)).toBe(false);
      expect(s.slack.socket.acks.size).toBeGreaterThan(0);
    } finally {
      s.slack.echo = null;
    }
  });

  it('reconnects after the connection drops, through refused attempts, with backoff', async () => {
    const before = s.slack.socket.connections.length;
    s.slack.socket.refuseNext = 1;
    const dropped = Date.now();
    s.slack.socket.drop();
    await eventually(async () => s.slack.socket.connections.length > before && s.slack.socket.openCount > 0, 10_000, 'reconnected');
    // Full jitter from 1 s, then 2 s: at most about 3 s for one refusal and the retry after it.
    expect(s.slack.socket.connections.at(-1)!.openedAt - dropped).toBeLessThan(4_000);
    const m = message('after reconnect');
    expect((await s.slack.socket.push(team.id, messageEvent(team, chan, m))).acked).toBe(true);
    await eventually(() => ingested(idOf(m)), 10_000, 'ingested after reconnect');
  });
});
