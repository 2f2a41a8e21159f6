/**
 * Retention (INTERFACE §10.5) against the real Postgres, on a clock the test sets: rows past
 * each retention go, rows inside it stay, in bounded batches; an uninstalled install loses
 * its events, graph and effects once it has been uninstalled long enough, and not before.
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { housekeepingPass, oldestAges } from '../../src/graph/housekeeping-pass.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setInstallStatus, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

const DAY = 86_400_000;
/** The test's "now": rows are dated against it, whatever the machine's clock says. */
const NOW = Date.parse('2031-03-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms);
const policy = { eventsDays: 90, uninstalledDays: 30 };

let pool: Pool;
let tenantId: string;
let active: Install;
beforeAll(async () => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  tenantId = (await createTenant(pool, TEST_MASTER_KEY, 'retention')).tenant_id;
  active = await createInstall(pool, { tenantId, connectorId: 'chatapp', externalId: `T${randomUUID()}` });
});
afterAll(() => pool.end());

const pass = (over: Partial<Parameters<typeof housekeepingPass>[0]> = {}) =>
  housekeepingPass({ pool, policy, now: () => NOW, pause: async () => undefined, ...over });

async function event(install: Install, at: Date, id = randomUUID()): Promise<string> {
  await pool.query(
    `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, received_at, payload)
     VALUES ($1, $2, $3, $4, 'message', $5, '{}')`,
    [install.install_id, id, install.tenant_id, install.connector_id, at],
  );
  return id;
}
const eventIds = async (install: Install) =>
  (await pool.query<{ id: string }>('SELECT id FROM events WHERE install_id = $1', [install.install_id])).rows.map(
    (r) => r.id,
  );

async function effect(install: Install, state: 'pending' | 'done' | 'failed', at: Date): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO effects (install_id, tenant_id, connector_id, namespace, shard, event_id, kind, serial_key, state,
                          updated_at)
     VALUES ($1, $2, $3, 'retention-test', 0, $4, 'k', 's', $5, $6) RETURNING id::text`,
    [install.install_id, install.tenant_id, install.connector_id, randomUUID(), state, at],
  );
  return rows[0]!.id;
}

async function exists(table: string, where: string, args: unknown[]): Promise<boolean> {
  return (await pool.query(`SELECT 1 FROM ${table} WHERE ${where}`, args)).rows.length > 0;
}

describe('housekeeping pass (INTERFACE §10.5)', () => {
  it('deletes events, finished effects, dead letters and expired idempotency keys past their retention', async () => {
    const old = await event(active, ago(91 * DAY));
    const kept = await event(active, ago(89 * DAY));
    const doneOld = await effect(active, 'done', ago(91 * DAY));
    const failedOld = await effect(active, 'failed', ago(91 * DAY));
    const pendingOld = await effect(active, 'pending', ago(91 * DAY));
    const doneNew = await effect(active, 'done', ago(89 * DAY));
    const dl = async (at: Date) =>
      (
        await pool.query<{ id: string }>(
          `INSERT INTO dead_letters (stream, stream_seq, subject, install_id, deliveries, error, payload, failed_at)
           VALUES ('s', 1, 'x', $1, 8, 'e', '\\x00', $2) RETURNING id::text`,
          [active.install_id, at],
        )
      ).rows[0]!.id;
    const dlOld = await dl(ago(91 * DAY));
    const dlNew = await dl(ago(89 * DAY));
    const key = async (at: Date) => {
      const k = randomUUID();
      await pool.query(
        `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, locked_until, created_at) VALUES ($1, $2, '\\x00', $3, $3)`,
        [tenantId, k, at],
      );
      return k;
    };
    const keyOld = await key(ago(25 * 3_600_000));
    const keyNew = await key(ago(23 * 3_600_000));

    const deleted = await pass();
    expect(deleted).toMatchObject({ events: 1, effects: 2, dead_letters: 1, idempotency_keys: 1 });
    expect(await eventIds(active)).toEqual([kept]);
    expect(old).not.toBe(kept);
    for (const [id, alive] of [
      [doneOld, false],
      [failedOld, false],
      [pendingOld, true],
      [doneNew, true],
    ] as const)
      expect(await exists('effects', 'id = $1', [id]), `effect ${id}`).toBe(alive);
    expect(await exists('dead_letters', 'id = $1', [dlOld])).toBe(false);
    expect(await exists('dead_letters', 'id = $1', [dlNew])).toBe(true);
    expect(await exists('idempotency_keys', 'key = $1', [keyOld])).toBe(false);
    expect(await exists('idempotency_keys', 'key = $1', [keyNew])).toBe(true);

    // The oldest kept event is the one 89 days old, as the metric reports it.
    expect((await oldestAges(pool, NOW)).events).toBeCloseTo(89 * 86_400, 0);
    // A second pass finds nothing left to do.
    expect(await pass()).toEqual({});
  });

  it('works in batches: a backlog larger than a pass allows is finished by the next passes', async () => {
    const install = await createInstall(pool, { tenantId, connectorId: 'chatapp', externalId: `T${randomUUID()}` });
    await pool.query(
      `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, received_at, payload)
       SELECT $1, 'bulk-' || g, $2, 'chatapp', 'message', $3, '{}' FROM generate_series(1, 250) g`,
      [install.install_id, tenantId, ago(100 * DAY)],
    );
    let pauses = 0;
    const small = { batchSize: 40, maxBatches: 3, pause: async () => void pauses++ };
    expect(await pass(small)).toMatchObject({ events: 120 });
    expect(pauses).toBe(3);
    expect(await pass(small)).toMatchObject({ events: 120 });
    expect(await pass(small)).toMatchObject({ events: 10 });
    expect(await eventIds(install)).toEqual([]);
  });

  it('an install uninstalled past SERVICE_UNINSTALLED_RETENTION_DAYS loses its events, graph and effects', async () => {
    const make = async (uninstalledDaysAgo: number) => {
      const inst = await createInstall(pool, { tenantId, connectorId: 'chatapp', externalId: `T${randomUUID()}` });
      await setInstallStatus(pool, inst.install_id, 'uninstalled');
      await pool.query('UPDATE installs SET updated_at = $2 WHERE install_id = $1', [
        inst.install_id,
        ago(uninstalledDaysAgo * DAY),
      ]);
      await event(inst, ago(DAY));
      await effect(inst, 'pending', ago(DAY));
      const node = async (ext: string) =>
        (
          await pool.query<{ node_id: string }>(
            `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id)
             VALUES ($1, 'chat.message', $2, 'chatapp', $3) RETURNING node_id`,
            [tenantId, `${inst.external_id}:${ext}`, inst.install_id],
          )
        ).rows[0]!.node_id;
      const [a, b] = [await node('a'), await node('b')];
      // An edge from a node of another (active) install keeps nothing alive.
      const other = (
        await pool.query<{ node_id: string }>(
          `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id)
           VALUES ($1, 'chat.user', $2, 'chatapp', $3) RETURNING node_id`,
          [tenantId, `${inst.external_id}:U1`, active.install_id],
        )
      ).rows[0]!.node_id;
      for (const [from, to, removed] of [
        [a, b, false],
        [other, a, true],
      ] as const)
        await pool.query(
          `INSERT INTO graph_edges (tenant_id, type, from_node, to_node, removed) VALUES ($1, 'reply_to', $2, $3, $4)`,
          [tenantId, from, to, removed],
        );
      return { inst, other };
    };
    const expired = await make(31);
    const recent = await make(29);

    const deleted = await pass();
    expect(deleted).toMatchObject({ events: 1, effects: 1, graph_nodes: 2, graph_edges: 2 });
    const rows = async (inst: Install) => ({
      events: (await eventIds(inst)).length,
      effects: (await pool.query('SELECT 1 FROM effects WHERE install_id = $1', [inst.install_id])).rows.length,
      nodes: (await pool.query('SELECT 1 FROM graph_nodes WHERE install_id = $1', [inst.install_id])).rows.length,
    });
    expect(await rows(expired.inst)).toEqual({ events: 0, effects: 0, nodes: 0 });
    expect(await rows(recent.inst)).toEqual({ events: 1, effects: 1, nodes: 2 });
    expect(await exists('graph_nodes', 'node_id = $1', [expired.other])).toBe(true);
    expect(await exists('installs', 'install_id = $1', [expired.inst.install_id])).toBe(true);
    // Each deleted node is a change of the feed (INTERFACE §10.1), written with its deletion.
    const { rows: changes } = await pool.query(
      `SELECT kind, op FROM graph_changes WHERE tenant_id = $1 AND install_id = $2`,
      [tenantId, expired.inst.install_id],
    );
    expect(changes).toEqual([
      { kind: 'chat.message', op: 'deleted' },
      { kind: 'chat.message', op: 'deleted' },
    ]);
  });
});
