/**
 * The graph on a real node (real Postgres, NATS JetStream, shard leases, install actor):
 * events go in through the durable ingest stream or the install actor, the projection
 * commits with the event, and the change feed (INTERFACE §7) publishes one notice per
 * changed node on `<ns>.graph.<tenant_id>.changed`, read here by a plain NATS subscriber.
 */
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphChange } from '../../src/graph/change.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { type IngestEvent } from '../../src/runtime/ports.js';
import { installKey } from '../../src/actors/install-protocol.js';
import { names as makeNames, type Names } from '../../src/runtime/names.js';
import { Router } from '../../src/runtime/router.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createInstall, setBackfill, type Install } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { TEST_MASTER_KEY, testNatsUrl } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

let node: TestNode;
let names: Names;
let sub: NatsConnection;
let router: Router;
let publisher: IngestPublisher;

beforeAll(async () => {
  node = await startTestNode();
  names = makeNames(node.namespace);
  sub = await connect({ servers: testNatsUrl() });
  // The node's own seal (INTERFACE §9.4): without it the node refuses these messages.
  const seal = createSeal([TEST_MASTER_KEY]);
  router = new Router({ nc: node.node.nc, names, shards: node.config.shards, log: pino({ level: 'silent' }), seal });
  publisher = new IngestPublisher({
    seal,
    js: jetstream(node.node.nc),
    names,
    shards: node.config.shards,
    blobs: pgBlobPort(node.pool),
    maxPayload: node.node.nc.info!.max_payload,
  });
});
afterAll(async () => {
  await sub?.close();
  await node?.stop();
});

/** Every notice on a subject, decoded, in arrival order. */
function listen(subject: string): Array<GraphChange & { subject: string }> {
  const got: Array<GraphChange & { subject: string }> = [];
  sub.subscribe(subject, {
    callback: (_err, m) => {
      got.push({ ...(m.json() as GraphChange), subject: m.subject });
    },
  });
  return got;
}

/** A chat install with nothing to backfill (no connector walker picks it up). */
async function chatInstall(tenantId: string, teamId: string): Promise<Install> {
  const inst = await createInstall(node.pool, { tenantId, connectorId: 'chatapp', externalId: teamId });
  await setBackfill(node.pool, inst.install_id, 'complete');
  return inst;
}

function event(inst: Install, id: string, kind: string, payload: unknown): IngestEvent {
  return {
    installId: inst.install_id,
    tenantId: inst.tenant_id,
    connectorId: inst.connector_id,
    id,
    kind,
    occurredAt: null,
    payload,
  };
}

/** Straight to the install actor: answers once the transaction committed and notices went out. */
async function ingest(ev: IngestEvent): Promise<{ stored: boolean }> {
  const r = await router.ask(installKey(ev.installId), { type: 'ingest', events: [ev] }, { timeoutMs: 10_000 });
  // A notice published before the actor's reply is delivered to us before this PONG.
  await sub.flush();
  return { stored: r.stored[0]! };
}

describe('graph change feed on a real node', () => {
  it('publishes one notice per committed change, none for a replay, only on the tenant subject', async () => {
    const a = await node.tenant('feed-a');
    const b = await node.tenant('feed-b');
    const chat = await chatInstall(a.tenant_id, 'T0FEED');
    const otherChat = await chatInstall(b.tenant_id, 'T0FEEDB');
    const mine = listen(names.graphChanged(a.tenant_id));
    const all = listen(names.graphChangedAll);
    await sub.flush();

    // Through the durable path: JetStream → shard consumer → install actor → Postgres.
    const first = event(chat, 'message:C1:1700000500.000100', 'message', {
      channel_id: 'C1',
      channel_type: 'channel',
      ts: '1700000500.000100',
      user: 'U1',
      text: 'ship it',
    });
    await publisher.publish(first);
    await until('three graph changes heard by the tenant', () => mine.length >= 3);
    await ingest(
      event(otherChat, 'message:C1:1700000500.000100', 'message', {
        channel_id: 'C1',
        ts: '1700000500.000100',
        text: 'elsewhere',
      }),
    );
    expect(mine.map((c) => [c.kind, c.op])).toEqual([
      ['chat.channel', 'upserted'],
      ['chat.message', 'upserted'],
      ['chat.user', 'upserted'],
    ]);
    const messageId = mine[1]!.node_id;

    // The same event again is a duplicate: nothing projected, nothing published.
    expect(await ingest(first)).toEqual({ stored: false });
    expect(mine).toHaveLength(3);

    // A reaction changes an edge: its two ends move, once each.
    await ingest(
      event(chat, 'reaction_added:C1:1700000500.000100:U2:eyes:1700000500.000200', 'reaction_added', {
        channel_id: 'C1',
        item_ts: '1700000500.000100',
        user: 'U2',
        name: 'eyes',
        event_ts: '1700000500.000200',
      }),
    );
    expect(mine.slice(3).map((c) => [c.kind, c.op])).toEqual([
      ['chat.user', 'upserted'],
      ['chat.message', 'upserted'],
    ]);

    await ingest(
      event(chat, 'message_deleted:C1:1700000500.000100:1700000500.000300', 'message_deleted', {
        channel_id: 'C1',
        channel_type: 'channel',
        ts: '1700000500.000100',
        event_ts: '1700000500.000300',
      }),
    );
    expect(mine.slice(5)).toEqual([
      { node_id: messageId, kind: 'chat.message', op: 'deleted', subject: names.graphChanged(a.tenant_id) },
    ]);

    // The other tenant's change (a message without author: channel and message) went to its own subject only.
    expect(all.filter((c) => c.subject === names.graphChanged(b.tenant_id)).map((c) => c.kind)).toEqual([
      'chat.channel',
      'chat.message',
    ]);
    expect(all).toHaveLength(8);

    // The edge reads what the actor wrote.
    const res = await fetch(`${node.url}/api/v1/graph/nodes/${messageId}`, { headers: a.auth });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { props: Record<string, unknown>; edges: unknown[] };
    expect(body.props).toMatchObject({ deleted: true, text: null, channel_id: 'C1' });
    expect(body.edges).toHaveLength(3);
  });

  it('sends a node action through the router to the install actor, with the emit errors', async () => {
    const t = await node.tenant('act');
    const inst = await chatInstall(t.tenant_id, 'T0ACT');
    await ingest(
      event(inst, 'message:C1:1700000600.000100', 'message', {
        channel_id: 'C1',
        ts: '1700000600.000100',
        user: 'U1',
        text: 'hello',
      }),
    );
    const list = await fetch(`${node.url}/api/v1/graph/nodes?kind=chat.message`, { headers: t.auth });
    const [msg] = ((await list.json()) as { nodes: Array<{ id: string }> }).nodes;
    const del = await fetch(`${node.url}/api/v1/connectors/installs/${inst.install_id}`, {
      method: 'DELETE',
      headers: t.auth,
    });
    expect(del.status).toBe(200);
    const res = await fetch(`${node.url}/api/v1/graph/nodes/${msg!.id}/actions`, {
      method: 'POST',
      headers: { ...t.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'reply', text: 'too late' }),
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('install_not_active');
    // The node stays, marked as from an uninstalled source.
    const after = (await (await fetch(`${node.url}/api/v1/graph/nodes/${msg!.id}`, { headers: t.auth })).json()) as {
      source_status: string;
    };
    expect(after.source_status).toBe('uninstalled');
  });

  it('stores and projects nothing for an install that is no longer active', async () => {
    const t = await node.tenant('gone');
    const chat = await chatInstall(t.tenant_id, 'T0GONE');
    const notices = listen(names.graphChanged(t.tenant_id));
    await sub.flush();
    const msg = (ts: string) => ({
      channel_id: 'C0GONE',
      channel_type: 'channel',
      ts,
      user: 'U0GONE',
      text: `late ${ts}`,
    });
    expect(await ingest(event(chat, 'Ev0KEPT', 'message', msg('1700000000.000100')))).toEqual({ stored: true });
    const before = notices.length;
    expect(before).toBeGreaterThan(0);
    await node.pool.query(`UPDATE installs SET status = 'uninstalled' WHERE install_id = $1`, [chat.install_id]);
    await router.ask(installKey(chat.install_id), { type: 'refresh' }, { timeoutMs: 10_000 });
    // A backfill page or webhook still in flight when the install went away.
    expect(await ingest(event(chat, 'Ev0LATE', 'message', msg('1700000001.000100')))).toEqual({ stored: false });
    const rows = await node.pool.query('SELECT id FROM events WHERE install_id = $1 ORDER BY id', [chat.install_id]);
    expect(rows.rows.map((r) => r.id)).toEqual(['Ev0KEPT']);
    expect(notices.length).toBe(before);
  });
});
