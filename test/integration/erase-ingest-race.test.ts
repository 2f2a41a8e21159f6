/**
 * INTERFACE §10.5: an erase and an ingest transaction of the same tenant that overlap. The
 * ingest side reads the tombstones (the drivers' `withoutForgotten`) before the erase has
 * written its own, and commits after the erase has looked for the login's events and nodes:
 * without a lock between them, the erase saw neither the uncommitted event nor its node and
 * answered 200 while the text it was asked to forget was being stored. The erase must wait
 * for such a transaction, and then find what it stored.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutErased } from '../../src/connectors/codehost/forget-erased.js';
import { withoutForgotten as chatWithoutForgotten } from '../../src/connectors/chatapp/forget-deleted.js';
import { eraseUser } from '../../src/graph/erase-user.js';
import { projectEvent } from '../../src/graph/project.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { createPool } from '../../src/store/db.js';
import { insertEvents, newEventOf } from '../../src/store/events.js';
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

/**
 * Runs the erase of `user` in its own transaction while the ingest transaction `ingest` is
 * still open, then commits `ingest` once the erase is either done (the defect) or seen
 * waiting for a lock; resolves when both have committed.
 */
async function eraseWhileIngestOpen(ingest: PoolClient, inst: Install, user: string): Promise<void> {
  const eraser = await begin();
  let finished = false;
  const erasing = (async () => {
    try {
      await eraseUser(eraser.client, inst, user);
      await eraser.client.query('COMMIT');
    } finally {
      finished = true;
    }
  })();
  await until('the erase waiting for the open ingest transaction (or already done without it)', async () => {
    if (finished) return true;
    const { rows } = await pool.query('SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted', [eraser.pid]);
    return rows.length > 0;
  });
  await ingest.query('COMMIT');
  try {
    await erasing;
  } finally {
    eraser.client.release();
  }
}

const storedPayload = async (inst: Install, id: string) =>
  (
    await pool.query<{ payload: Record<string, any> }>('SELECT payload FROM events WHERE install_id = $1 AND id = $2', [
      inst.install_id,
      id,
    ])
  ).rows[0]!.payload;

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

    const ingest = await begin();
    try {
      // The ingest transaction as writeIngest runs it: the tombstones read, the event stored and projected.
      const kept = (await withoutErased(ingest.client, [{ install: inst, events: [event] }]))[0]?.[0];
      expect((kept!.payload as any).comment.body).toBe('words to be forgotten'); // nothing erased yet
      await insertEvents(ingest.client, [newEventOf(kept!)]);
      await projectEvent(ingest.client, inst, kept!);
      await eraseWhileIngestOpen(ingest.client, inst, login);
    } finally {
      ingest.client.release();
    }

    const stored = await storedPayload(inst, event.id);
    expect(stored.comment).not.toHaveProperty('body');
    expect(stored.issue.body).toBe('the issue text stays');
    const { rows } = await pool.query<{ props: Record<string, unknown> }>(
      `SELECT props FROM graph_nodes WHERE tenant_id = $1 AND props::text LIKE '%words to be forgotten%'`,
      [inst.tenant_id],
    );
    expect(rows).toEqual([]);
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

    const ingest = await begin();
    try {
      const kept = (await chatWithoutForgotten(ingest.client, [{ install: inst, events: [event] }]))[0]?.[0];
      expect((kept!.payload as any).text).toBe('a message to be forgotten'); // nothing erased yet
      await insertEvents(ingest.client, [newEventOf(kept!)]);
      await projectEvent(ingest.client, inst, kept!);
      await eraseWhileIngestOpen(ingest.client, inst, `${team}:U1`);
    } finally {
      ingest.client.release();
    }

    expect(await storedPayload(inst, event.id)).not.toHaveProperty('text');
    const { rows } = await pool.query(
      `SELECT props FROM graph_nodes WHERE tenant_id = $1 AND props::text LIKE '%a message to be forgotten%'`,
      [inst.tenant_id],
    );
    expect(rows).toEqual([]);
  });
});
