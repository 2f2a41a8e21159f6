/**
 * A deleted chat message is forgotten (INTERFACE §10.5): its unique words are gone from the
 * events listing, search, the dead letters and every text column of the database within
 * 10 s of the deletion, whichever order the deletion and its original arrive in, and a dead
 * letter replayed after the deletion stores no text.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  nextTs,
  type FakeChannel,
  type FakeMessage,
  type FakeTeam,
} from 'connector-service/testing';
import { fromSlackEvent } from '../../src/connectors/chatapp/normalize-event.js';
import { encodeIngestMessage, ingestMsgId } from '../../src/ingest/message.js';
import { installKey, names as makeNames, shardOf } from '../../src/runtime/names.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import { allEvents, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { columnsHolding } from '../support/text-in-db.js';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let ch: FakeChannel;
let tenant: Tenant;
let installId: string;

beforeAll(async () => {
  s = await startChatStack();
  team = s.slack.addTeam();
  ch = s.slack.addChannel(team.id, { type: 'channel' });
  tenant = await s.node.tenant('forget');
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

/** A word no other test writes: letters and digits, so no stemmer changes it. */
const uniqueWord = () => `fgt${randomBytes(5).toString('hex')}x`;
const deliver = async (event: Record<string, unknown>) =>
  expect((await s.slack.deliver(team.id, event)).status).toBe(200);
const events = () => allEvents(s.node.url, tenant, installId);
const eventById = async (id: string) => (await events()).find((e) => e.id === id);
const search = async (q: string) => {
  const r = await fetch(`${s.node.url}/api/v1/graph/nodes?q=${encodeURIComponent(q)}`, { headers: tenant.auth });
  expect(r.status).toBe(200);
  return (await json(r)).nodes as Array<{ external_id: string }>;
};
const messageNode = async (ts: string) => {
  const r = await fetch(`${s.node.url}/api/v1/graph/nodes?kind=chat.message&limit=500`, { headers: tenant.auth });
  const nodes = (await json(r)).nodes as Array<{ external_id: string; props: Record<string, unknown> }>;
  return nodes.find((n) => n.external_id === `${team.id}:${ch.id}:${ts}`) ?? null;
};

/** Nowhere the tenant or an operator can read: listing, search, export, dead letters, any column. */
async function expectForgotten(word: string): Promise<void> {
  expect(JSON.stringify(await events())).not.toContain(word);
  expect(await search(word)).toEqual([]);
  const exported = await fetch(`${s.node.url}/api/v1/export`, { headers: tenant.auth });
  expect(exported.status).toBe(200);
  expect(await exported.text()).not.toContain(word);
  expect(await columnsHolding(s.node.pool, word)).toEqual([]);
}

/** What the ingest consumer records after the last failed delivery of the message (dead-letters.test.ts). */
async function deadLetterOf(m: FakeMessage): Promise<string> {
  const draft = fromSlackEvent(messageEvent(team, ch, m))!;
  const event = { installId, tenantId: tenant.tenant_id, connectorId: 'chatapp', ...draft };
  const n = makeNames(s.node.namespace);
  return recordDeadLetter(s.node.pool, {
    stream: n.ingestStream,
    streamSeq: 1,
    subject: n.ingestSubject(shardOf(installKey(installId), s.node.config.shards), 'chatapp', installId),
    msgId: ingestMsgId(installId, event.id),
    installId,
    deliveries: 8,
    error: 'relation "graph_nodes" is locked',
    payload: encodeIngestMessage(event),
  });
}

describe('a deleted chat message is forgotten (INTERFACE §10.5)', () => {
  it('posted, edited, dead-lettered, then deleted: no copy of either text is left within 10 s', async () => {
    const [first, edit] = [uniqueWord(), uniqueWord()];
    const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text: `launch plan ${first}` };
    await deliver(messageEvent(team, ch, m));
    const editTs = nextTs();
    await deliver(messageChangedEvent(ch, m, `launch plan ${edit}`, editTs));
    await until('the edit in the graph', async () => (await search(edit)).length === 1, { timeoutMs: 10_000 });
    // A copy of the original that could not be stored at the time (a replay would bring it back).
    await deadLetterOf(m);
    expect(await columnsHolding(s.node.pool, first)).toEqual(
      expect.arrayContaining(['events.payload', 'dead_letters.payload']),
    );
    expect(await columnsHolding(s.node.pool, edit)).toEqual(
      expect.arrayContaining(['events.payload', 'graph_nodes.props', 'graph_nodes.search_text']),
    );

    const delTs = nextTs();
    await deliver(messageDeletedEvent(ch, m, delTs));
    const deletedAt = Date.now();
    const delId = `message_deleted:${ch.id}:${m.ts}:${delTs}`;
    await until('the deletion stored', () => eventById(delId), { timeoutMs: 10_000 });
    expect(Date.now() - deletedAt).toBeLessThan(10_000);
    await expectForgotten(first);
    await expectForgotten(edit);

    // Ids, kinds and timestamps stay.
    const kept = (await events()).filter((e) => e.id.includes(m.ts));
    expect(kept.map((e) => e.kind).sort()).toEqual(['message', 'message_changed', 'message_deleted']);
    for (const e of kept) expect(e.payload).toMatchObject({ channel_id: ch.id, ts: m.ts });
    expect((await messageNode(m.ts))?.props).toMatchObject({ deleted: true, text: null });
  });

  it('a deletion that arrives before its original keeps the original from bringing the text back', async () => {
    const word = uniqueWord();
    const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text: `backfilled ${word}` };
    const delTs = nextTs();
    await deliver(messageDeletedEvent(ch, m, delTs));
    await until('the deletion stored', () => eventById(`message_deleted:${ch.id}:${m.ts}:${delTs}`), {
      timeoutMs: 10_000,
    });
    await deliver(messageEvent(team, ch, m));
    const original = await until('the late original stored', () => eventById(`message:${ch.id}:${m.ts}`), {
      timeoutMs: 10_000,
    });
    expect(original.payload).toMatchObject({ channel_id: ch.id, ts: m.ts, user: 'U0HUMAN' });
    expect(original.payload).not.toHaveProperty('text');
    expect((await messageNode(m.ts))?.props).toMatchObject({ deleted: true, text: null });
    await expectForgotten(word);
  });

  it('a dead letter of the original, replayed after the deletion, stores no text', async () => {
    const word = uniqueWord();
    // Never stored: its only copy is the dead letter, until an operator replays it.
    const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text: `failed ${word}` };
    const dead = await deadLetterOf(m);
    const delTs = nextTs();
    await deliver(messageDeletedEvent(ch, m, delTs));
    await until('the deletion stored', () => eventById(`message_deleted:${ch.id}:${m.ts}:${delTs}`), {
      timeoutMs: 10_000,
    });
    await expectForgotten(word);
    const res = await fetch(`${s.node.url}/api/v1/dead-letters/${dead}/replay`, {
      method: 'POST',
      headers: tenant.auth,
    });
    expect(res.status).toBe(200);
    const replayed = await until('the replayed original stored', () => eventById(`message:${ch.id}:${m.ts}`), {
      timeoutMs: 10_000,
    });
    expect(replayed.payload).toMatchObject({ channel_id: ch.id, ts: m.ts, user: 'U0HUMAN' });
    expect(replayed.payload).not.toHaveProperty('text');
    expect((await messageNode(m.ts))?.props).toMatchObject({ deleted: true, text: null });
    await expectForgotten(word);
  });
});
