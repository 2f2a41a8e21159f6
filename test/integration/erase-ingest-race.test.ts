/**
 * INTERFACE §10.5: an erase and an ingest transaction (writeIngest, as the install actor's
 * group commit runs it) of the same tenant that overlap. The ingest transaction is held once
 * it has stored and projected its events, the erase runs meanwhile:
 *
 * - the ingest side read the tombstones before the erase wrote its own and commits after the
 *   erase looked for the user's events and nodes: without a lock between them the erase saw
 *   neither and answered 200 while the text was being stored. The erase must wait for the
 *   ingest transaction and then find what it stored;
 * - an ingest transaction that writes (a deletion projected on the user's message) before it
 *   takes that lock deadlocks with the erase that holds it and waits for the written row.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatDriver, type ChatDriverDeps } from '../../src/connectors/chatapp/driver.js';
import { codehostDriver, type CodehostDriverDeps } from '../../src/connectors/codehost/driver.js';
import type { DriverRegistry } from '../../src/connectors/driver.js';
import { eraseUser } from '../../src/graph/erase-user.js';
import { projectBatches, type InstallEvents } from '../../src/graph/project.js';
import { writeIngest } from '../../src/ingest/transaction.js';
import { createLogger } from '../../src/log.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { createPool, type Queryable } from '../../src/store/db.js';
import type { Install } from '../../src/store/installs.js';
import { testDatabaseUrl } from '../support/env.js';
import { graphDb } from '../support/graph-db.js';
import { until } from '../support/until.js';

let pool: Pool;
let g: ReturnType<typeof graphDb>;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 6 });
  g = graphDb(pool);
});
afterAll(() => pool.end());

const log = createLogger({ level: 'silent', node: 'test' });
/** The drivers as a node has them: only their ingest hooks run here (no platform is called). */
const drivers = new Map<string, unknown>([
  ['chatapp', chatDriver({ config: { chatapp: { apiUrl: 'http://127.0.0.1:9/api/' } } } as unknown as ChatDriverDeps)],
  ['codehost', codehostDriver({ clients: null } as unknown as CodehostDriverDeps)],
]) as DriverRegistry;

const eventOf = (inst: Install, id: string, kind: string, payload: unknown): IngestEvent => ({
  id,
  kind,
  payload,
  installId: inst.install_id,
  tenantId: inst.tenant_id,
  connectorId: inst.connector_id,
  occurredAt: null,
});

async function begin(): Promise<{ client: PoolClient; pid: number }> {
  const client = await pool.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  await client.query('BEGIN');
  return { client, pid: rows[0]!.pid };
}

/** What settled `p` with: null, or its error. */
const outcome = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => null,
    (err: unknown) => err,
  );

/**
 * Ingests `events` of `inst` in a transaction held once they are stored and projected, runs
 * the erase of `user` in another meanwhile, lets the ingest transaction go on once the erase is
 * either done or seen waiting for a lock, and commits both. Returns how each ended (null: committed).
 */
async function eraseDuringIngest(inst: Install, events: IngestEvent[], user: string) {
  let projected!: () => void;
  const atProjection = new Promise<void>((r) => (projected = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const ports = {
    drivers,
    log,
    shardOf: () => 0,
    namespace: 'test',
    project: async (tx: Queryable, batches: readonly InstallEvents[]) => {
      const changes = await projectBatches(tx, batches, log);
      projected();
      await released;
      return changes;
    },
  };
  const ingest = await begin();
  const eraser = await begin();
  try {
    const ctx = { install: inst, signal: new AbortController().signal, log };
    const writing = outcome(
      writeIngest(ingest.client, [{ ctx, events }], ports).then(() => ingest.client.query('COMMIT')),
    );
    await atProjection;
    let finished = false;
    const erasing = outcome(
      eraseUser(eraser.client, inst, user)
        .then(() => eraser.client.query('COMMIT'))
        .finally(() => (finished = true)),
    );
    await until('the erase waiting for the open ingest transaction (or already done without it)', async () => {
      if (finished) return true;
      const { rows } = await pool.query('SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted', [eraser.pid]);
      return rows.length > 0;
    });
    release();
    // Two transactions waiting for each other: Postgres ends one with 40P01 after deadlock_timeout.
    return { ingest: await writing, erase: await erasing };
  } finally {
    release();
    for (const c of [ingest.client, eraser.client]) {
      await c.query('ROLLBACK').catch(() => undefined);
      c.release();
    }
  }
}

const storedPayload = async (inst: Install, id: string) =>
  (
    await pool.query<{ payload: Record<string, any> }>('SELECT payload FROM events WHERE install_id = $1 AND id = $2', [
      inst.install_id,
      id,
    ])
  ).rows[0]!.payload;

const nodesHolding = async (inst: Install, text: string) =>
  (
    await pool.query(`SELECT props FROM graph_nodes WHERE tenant_id = $1 AND props::text LIKE $2`, [
      inst.tenant_id,
      `%${text}%`,
    ])
  ).rows;

describe('an erase overlapping an ingest transaction of the same tenant', () => {
  it("code host: the login's comment stored meanwhile is found and loses its text, in the event and the graph", async () => {
    const inst = await g.freshInstall('codehost', String(100_000 + Math.floor(Math.random() * 1e6)));
    const login = `erased-${randomBytes(3).toString('hex')}`;
    const repository = { id: 4242, full_name: 'acme/widgets', name: 'widgets', owner: { login: 'acme' } };
    const event = eventOf(inst, randomUUID(), 'issue_comment.created', {
      action: 'created',
      repository,
      issue: { number: 7, title: 'A bug', body: 'the issue text stays', user: { login: 'someone-else' } },
      comment: { id: 99, body: 'words to be forgotten', user: { login } },
    });

    expect(await eraseDuringIngest(inst, [event], login)).toEqual({ ingest: null, erase: null });

    const stored = await storedPayload(inst, event.id);
    expect(stored.comment).not.toHaveProperty('body');
    expect(stored.issue.body).toBe('the issue text stays');
    expect(await nodesHolding(inst, 'words to be forgotten')).toEqual([]);
  });

  it("chat: the user's message stored meanwhile is found and loses its text", async () => {
    const team = `T${randomBytes(4).toString('hex').toUpperCase()}`;
    const inst = await g.freshInstall('chatapp', team);
    const ts = '1700000000.000100';
    const event = eventOf(inst, `message:C9:${ts}`, 'message', {
      channel_id: 'C9',
      channel_type: 'channel',
      ts,
      user: 'U1',
      text: 'a message to be forgotten',
    });

    expect(await eraseDuringIngest(inst, [event], `${team}:U1`)).toEqual({ ingest: null, erase: null });

    expect(await storedPayload(inst, event.id)).not.toHaveProperty('text');
    expect(await nodesHolding(inst, 'a message to be forgotten')).toEqual([]);
  });

  it("chat: a deletion of the user's message ingested while the user is erased: both commit, no deadlock", async () => {
    const team = `T${randomBytes(4).toString('hex').toUpperCase()}`;
    const inst = await g.freshInstall('chatapp', team);
    const ts = '1700000100.000100';
    await g.project(inst, {
      id: `message:C9:${ts}`,
      kind: 'message',
      payload: { channel_id: 'C9', channel_type: 'channel', ts, user: 'U1', text: 'deleted, then erased' },
    });
    // Its projection locks the message's node, which the erase wants too.
    const deletion = eventOf(inst, `message_deleted:C9:${ts}:1700000200.000100`, 'message_deleted', {
      channel_id: 'C9',
      channel_type: 'channel',
      ts,
      event_ts: '1700000200.000100',
    });

    expect(await eraseDuringIngest(inst, [deletion], `${team}:U1`)).toEqual({ ingest: null, erase: null });

    expect(await nodesHolding(inst, 'deleted, then erased')).toEqual([]);
  });
});
