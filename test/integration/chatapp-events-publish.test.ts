/**
 * Chat events over HTTP when the event cannot be stored (ARCHITECTURE "Inbound": 2xx only
 * after the JetStream ack; INTERFACE §3 `chatapp/events`, §2 `unavailable` 503). The stream
 * really refuses or really stays silent (test/support/ingest-outage.ts); Slack's retry of
 * the same event afterwards is stored, once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageEvent } from 'connector-service/testing';
import { allEvents, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { nextTs, type FakeChannel, type FakeMessage, type FakeTeam } from 'connector-service/testing';
import { ingestOutage } from '../support/ingest-outage.js';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let chan: FakeChannel;
let tenant: Tenant;
let installId: string;

beforeAll(async () => {
  s = await startChatStack();
  team = s.slack.addTeam();
  chan = s.slack.addChannel(team.id);
  tenant = await s.node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  await until(
    'backfill complete',
    async () => {
      const r = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth });
      return (await json(r)).backfill.state === 'complete';
    },
    { timeoutMs: 10_000 },
  );
});
afterAll(() => s?.stop());

const message = (text: string): FakeMessage => ({ ts: nextTs(), user: 'U0HUMAN', text });
const idOf = (m: FakeMessage) => `message:${chan.id}:${m.ts}`;
const storedCount = async (id: string): Promise<number> =>
  (await s.node.pool.query('SELECT count(*)::int AS n FROM events WHERE install_id = $1 AND id = $2', [installId, id]))
    .rows[0].n;
const ingested = async (id: string) => (await allEvents(s.node.url, tenant, installId)).some((e) => e.id === id);

/** Delivers `m` while the stream is out as `how`; returns the answer. */
async function deliverDuringOutage(how: 'refuse' | 'silence', m: FakeMessage, eventId: string): Promise<Response> {
  const outage = await ingestOutage(s.node.namespace, how);
  try {
    return await s.slack.deliver(team.id, messageEvent(team, chan, m), { eventId });
  } finally {
    await outage.restore();
  }
}

/** Nothing of `m` was stored: a message delivered after it (same install, in order) is ingested, `m` is not. */
async function expectNotStored(m: FakeMessage): Promise<void> {
  const after = message('after the outage');
  expect((await s.slack.deliver(team.id, messageEvent(team, chan, after))).status).toBe(200);
  await until('control message', () => ingested(idOf(after)), { timeoutMs: 10_000 });
  expect(await storedCount(idOf(m))).toBe(0);
}

/** Slack retries the event (same event_id, X-Slack-Retry-Num): acknowledged, and stored once. */
async function expectRetryStoredOnce(m: FakeMessage, eventId: string): Promise<void> {
  for (const retryNum of [1, 2]) {
    const res = await s.slack.deliver(team.id, messageEvent(team, chan, m), { eventId, retryNum });
    expect(res.status).toBe(200);
  }
  await until('retry ingested', () => ingested(idOf(m)), { timeoutMs: 10_000 });
  expect(await storedCount(idOf(m))).toBe(1);
}

describe('chatapp events when JetStream does not take the event', () => {
  it('a publish the stream refuses answers 503 unavailable; nothing is stored; the retry is stored once', async () => {
    const m = message('refused by the stream');
    const res = await deliverDuringOutage('refuse', m, 'EvREFUSED');
    expect(res.status).toBe(503);
    expect((await json(res)).error.code).toBe('unavailable');
    await expectNotStored(m);
    await expectRetryStoredOnce(m, 'EvREFUSED');
  });

  it('a publish left without an ack answers 503 unavailable; nothing is stored; the retry is stored once', async () => {
    const m = message('never acknowledged');
    const res = await deliverDuringOutage('silence', m, 'EvSILENT');
    expect(res.status).toBe(503);
    expect((await json(res)).error.code).toBe('unavailable');
    await expectNotStored(m);
    await expectRetryStoredOnce(m, 'EvSILENT');
  });
});
