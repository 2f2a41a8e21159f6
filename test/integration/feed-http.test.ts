/**
 * The change feed over HTTP (INTERFACE §10.1) on a real node: events go to the install actor,
 * their graph changes are read back from `GET /api/v1/graph/changes` by cursor, held by a
 * long-poll until the next commit, and streamed as Server-Sent Events that resume after
 * `Last-Event-ID`. Tenants see only their own changes; a cursor past the retention is 410.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installKey } from '../../src/actors/install-protocol.js';
import { pruneChanges } from '../../src/graph/change-log.js';
import type { FeedChange } from '../../src/graph/change-read.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { Router } from '../../src/runtime/router.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createInstall, setBackfill, type Install } from '../../src/store/installs.js';
import { TEST_MASTER_KEY } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { scrapeSample } from '../support/metrics.js';
import { openSse } from '../support/sse.js';
import { until } from '../support/until.js';

let node: TestNode;
let router: Router;

beforeAll(async () => {
  node = await startTestNode();
  const seal = createSeal([TEST_MASTER_KEY]);
  const names = makeNames(node.namespace);
  router = new Router({ nc: node.node.nc, names, shards: node.config.shards, log: pino({ level: 'silent' }), seal });
});
afterAll(async () => {
  await node?.stop();
});

async function chatInstall(tenantId: string, teamId: string): Promise<Install> {
  const inst = await createInstall(node.pool, { tenantId, connectorId: 'chatapp', externalId: teamId });
  await setBackfill(node.pool, inst.install_id, 'complete');
  return inst;
}

/** A chat message of `user` in `channel` at `ts`: changes the channel, the message and the user. */
async function say(inst: Install, channel: string, ts: string, user = 'U1', text = `at ${ts}`): Promise<void> {
  const ev: IngestEvent = {
    installId: inst.install_id,
    tenantId: inst.tenant_id,
    connectorId: inst.connector_id,
    id: `message:${channel}:${ts}`,
    kind: 'message',
    occurredAt: null,
    payload: { channel_id: channel, channel_type: 'channel', ts, user, text },
  };
  await router.ask(installKey(inst.install_id), { type: 'ingest', events: [ev] }, { timeoutMs: 10_000 });
}

interface Page {
  changes: FeedChange[];
  next_cursor: string;
}

async function changes(auth: Record<string, string>, query = ''): Promise<{ status: number; body: Page }> {
  const res = await fetch(`${node.url}/api/v1/graph/changes${query}`, { headers: auth });
  return { status: res.status, body: (await res.json()) as Page };
}

describe('the change feed over HTTP', () => {
  it('pages the tenant’s changes oldest first by cursor, with filters, latest and 400s', async () => {
    const a = await node.tenant('feed-http-a');
    const b = await node.tenant('feed-http-b');
    const chat = await chatInstall(a.tenant_id, 'TFEEDA');
    const other = await chatInstall(b.tenant_id, 'TFEEDB');

    const empty = await changes(a.auth);
    expect(empty).toEqual({ status: 200, body: { changes: [], next_cursor: '0' } });

    await say(chat, 'C1', '1700000001.000100');
    await say(other, 'C9', '1700000001.000100');
    await say(chat, 'C1', '1700000002.000100');

    const all = await changes(a.auth);
    expect(all.status).toBe(200);
    // Each message changes its node and, by the edges it adds, its channel and its author.
    expect(all.body.changes.map((c) => [c.cursor, c.kind, c.op])).toEqual([
      ['1', 'chat.channel', 'upserted'],
      ['2', 'chat.message', 'upserted'],
      ['3', 'chat.user', 'upserted'],
      ['4', 'chat.message', 'upserted'],
      ['5', 'chat.channel', 'upserted'],
      ['6', 'chat.user', 'upserted'],
    ]);
    expect(all.body.next_cursor).toBe('6');
    expect(all.body.changes.every((c) => c.install_id === chat.install_id && c.connector_id === 'chatapp')).toBe(true);

    const paged = await changes(a.auth, '?limit=2');
    expect(paged.body.changes.map((c) => c.cursor)).toEqual(['1', '2']);
    const rest = await changes(a.auth, `?cursor=${paged.body.next_cursor}&limit=2`);
    expect(rest.body.changes.map((c) => c.cursor)).toEqual(['3', '4']);
    expect((await changes(a.auth, '?cursor=6')).body).toEqual({ changes: [], next_cursor: '6' });
    expect((await changes(a.auth, '?cursor=latest')).body).toEqual({ changes: [], next_cursor: '6' });

    const messages = await changes(a.auth, '?kind=chat.message');
    expect(messages.body.changes.map((c) => c.cursor)).toEqual(['2', '4']);
    expect((await changes(a.auth, `?install_id=${other.install_id}`)).status).toBe(404);
    expect((await changes(b.auth)).body.changes.map((c) => c.kind)).toEqual([
      'chat.channel',
      'chat.message',
      'chat.user',
    ]);

    for (const bad of ['?cursor=abc', '?cursor=-1', '?limit=0', '?limit=1001', '?wait=31', '?cursor=99']) {
      const res = await changes(a.auth, bad);
      expect([bad, res.status]).toEqual([bad, 400]);
      expect((res.body as unknown as { error: { code: string } }).error.code).toBe('bad_request');
    }
  });

  it('answers 410 cursor_expired before changes older than the retention, and starts after them', async () => {
    const t = await node.tenant('feed-http-expired');
    const chat = await chatInstall(t.tenant_id, 'TFEEDX');
    await say(chat, 'C1', '1700000001.000100');
    await say(chat, 'C1', '1700000002.000100');
    // The first commit's three changes become 8 days old (the default retention is 7).
    await node.pool.query(
      `UPDATE graph_changes SET changed_at = now() - interval '8 days' WHERE tenant_id = $1 AND seq <= 3`,
      [t.tenant_id],
    );
    const expired = await changes(t.auth, '?cursor=0');
    expect(expired.status).toBe(410);
    expect((expired.body as unknown as { error: { code: string } }).error.code).toBe('cursor_expired');
    // Without a cursor: from the oldest retained change.
    expect((await changes(t.auth)).body.changes.map((c) => c.cursor)).toEqual(['4', '5', '6']);
    expect((await changes(t.auth, '?cursor=3')).body.changes.map((c) => c.cursor)).toEqual(['4', '5', '6']);

    // Pruned (the retention's deletion): still 410 for a cursor before them, and the head stays.
    expect(await pruneChanges(node.pool, new Date(Date.now() - 7 * 86_400_000), 1000)).toBeGreaterThanOrEqual(3);
    expect((await changes(t.auth, '?cursor=1')).status).toBe(410);
    expect((await changes(t.auth, '?cursor=latest')).body.next_cursor).toBe('6');
  });

  it('holds a long-poll until the next commit, and answers an empty page when the wait ends', async () => {
    const t = await node.tenant('feed-http-wait');
    const chat = await chatInstall(t.tenant_id, 'TFEEDW');
    const quiet = await changes(t.auth, '?cursor=latest&wait=1');
    expect(quiet.body).toEqual({ changes: [], next_cursor: '0' });

    const held = changes(t.auth, '?cursor=0&wait=30');
    // The request is held (its tenant has a waiter) before the commit it waits for.
    await until(
      'the long-poll to be held',
      async () => (await scrapeSample(node.url, 'connector_service_feed_held_requests', { mode: 'long_poll' })) > 0,
    );
    await say(chat, 'C1', '1700000003.000100');
    const got = await held;
    expect(got.status).toBe(200);
    expect(got.body.changes.map((c) => c.kind)).toEqual(['chat.channel', 'chat.message', 'chat.user']);
    expect(got.body.next_cursor).toBe('3');
  });

  it('streams changes as SSE and resumes after Last-Event-ID', async () => {
    const t = await node.tenant('feed-http-sse');
    const chat = await chatInstall(t.tenant_id, 'TFEEDS');
    await say(chat, 'C1', '1700000004.000100');
    const stream = await openSse(`${node.url}/api/v1/graph/changes`, t.auth);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('x-request-id')).toBeTruthy();
    await until('the first commit on the stream', () => stream.events.length >= 3);
    await say(chat, 'C2', '1700000005.000100', 'U2');
    await until('the second commit on the stream', () => stream.events.length >= 6);
    stream.close();
    expect(stream.events.map((e) => [e.event, e.id])).toEqual(
      ['1', '2', '3', '4', '5', '6'].map((id) => ['change', id]),
    );
    const sixth = JSON.parse(stream.events[5]!.data) as FeedChange;
    expect(sixth).toMatchObject({ cursor: '6', op: 'upserted', install_id: chat.install_id, connector_id: 'chatapp' });

    // A reconnect names the last event it had; the original cursor in the URL is overridden.
    await say(chat, 'C2', '1700000006.000100', 'U2');
    const again = await openSse(`${node.url}/api/v1/graph/changes?cursor=0`, { ...t.auth, 'last-event-id': '4' });
    await until('the rest after event 4', () => again.events.length >= 5);
    again.close();
    expect(again.events.map((e) => e.id)).toEqual(['5', '6', '7', '8', '9']);

    const bad = await fetch(`${node.url}/api/v1/graph/changes`, {
      headers: { ...t.auth, accept: 'text/event-stream', 'last-event-id': 'nope' },
    });
    expect(bad.status).toBe(400);
  });
});
