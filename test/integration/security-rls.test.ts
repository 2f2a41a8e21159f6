/**
 * The database fence (migration 012, README "Security model"), as the application role
 * (a plain login role in `connectors_app`; the suite's own `postgres` is a superuser and
 * bypasses row-level security): a query with no tenant filter, run in a tenant scope,
 * sees only that tenant's rows; with no scope it sees nothing; writes for another tenant
 * are refused. Then a whole node runs as that role (migrations as the owner through
 * DATABASE_MIGRATE_URL) and its tenant routes and ingest path work.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstream } from '@nats-io/jetstream';
import { IngestPublisher } from '../../src/runtime/ingest-stream.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { ensureAppRole } from '../../src/store/app-role.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { runInTenantScope, tenantScopedPool } from '../../src/store/tenant-scope.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';

const role = `connectors_rls_${randomBytes(4).toString('hex')}`;
let appUrl: string;
let owner: pg.Pool;
const pools: pg.Pool[] = [];
const appPool = (opts: Parameters<typeof createPool>[1] = {}) => {
  const p = createPool(appUrl, { max: 2, ...opts });
  pools.push(p);
  return p;
};

beforeAll(async () => {
  appUrl = await ensureAppRole(testDatabaseUrl(), role, randomBytes(12).toString('hex'));
  owner = createPool(testDatabaseUrl(), { max: 2 });
});
afterAll(async () => {
  for (const p of pools) await p.end();
  await owner?.end();
  const c = new pg.Client({ connectionString: testDatabaseUrl() });
  await c.connect();
  await c.query(`DROP ROLE IF EXISTS ${role}`);
  await c.end();
});

async function seedTenant(name: string) {
  const t = await createTenant(owner, TEST_MASTER_KEY, name);
  const inst = await createInstall(owner, {
    tenantId: t.tenant_id,
    connectorId: 'chatapp',
    externalId: `T${randomBytes(4).toString('hex')}`,
  });
  await owner.query(
    `INSERT INTO events (install_id, id, tenant_id, connector_id, kind, payload)
     VALUES ($1, 'e1', $2, 'chatapp', 'message', '{}')`,
    [inst.install_id, t.tenant_id],
  );
  return { ...t, install: inst };
}

describe('row-level security as the application role', () => {
  it('an unfiltered query sees only the scoped tenant; no scope sees nothing; foreign writes fail', async () => {
    const a = await seedTenant('rls-a');
    const b = await seedTenant('rls-b');
    const scoped = tenantScopedPool(appPool());
    const superuserCount = (await owner.query('SELECT count(DISTINCT tenant_id)::int AS n FROM installs')).rows[0].n;
    expect(superuserCount).toBeGreaterThanOrEqual(2);

    // Deliberately no WHERE tenant_id: the fence, not the query, keeps B out.
    for (const table of ['tenants', 'api_keys', 'installs', 'events']) {
      const rows = (
        await runInTenantScope(a.tenant_id, () => scoped.query(`SELECT DISTINCT tenant_id FROM ${table}`))
      ).rows.map((r: { tenant_id: string }) => r.tenant_id);
      expect(rows, table).toEqual([a.tenant_id]);
    }
    const own = await runInTenantScope(b.tenant_id, () => scoped.query('SELECT install_id FROM installs'));
    expect(own.rows).toEqual([{ install_id: b.install.install_id }]);

    // No scope at all: nothing (fails closed), and the scoped pool refuses to run.
    const plain = appPool();
    expect((await plain.query('SELECT * FROM installs')).rowCount).toBe(0);
    await expect(scoped.query('SELECT 1')).rejects.toMatchObject({ code: 'internal' });

    // Writing a row of tenant B from A's scope is refused by the policy's WITH CHECK.
    const write = runInTenantScope(a.tenant_id, () =>
      scoped.query(`INSERT INTO users (tenant_id, email) VALUES ($1, 'x@b.test')`, [b.tenant_id]),
    );
    await expect(write).rejects.toMatchObject({ code: '42501' });
    // Nor can it move B's rows: they are invisible to its UPDATE.
    const moved = await runInTenantScope(a.tenant_id, () =>
      scoped.query(`UPDATE installs SET display_name = 'mine' WHERE install_id = $1`, [b.install.install_id]),
    );
    expect(moved.rowCount).toBe(0);

    // The declared cross-tenant scope sees both.
    const system = appPool({ scope: 'system' });
    const both = await system.query('SELECT tenant_id FROM installs WHERE tenant_id = ANY($1)', [
      [a.tenant_id, b.tenant_id],
    ]);
    expect(both.rowCount).toBe(2);
    // And the App-installation table stays closed to the role (spec §2.3).
    await expect(system.query('SELECT * FROM codehost_app_installations')).rejects.toMatchObject({ code: '42501' });
  });
});

describe('a node running as the application role', () => {
  let node: TestNode;
  beforeAll(async () => {
    node = await startTestNode({ DATABASE_URL: appUrl, DATABASE_MIGRATE_URL: testDatabaseUrl() });
  });
  afterAll(() => node?.stop());

  it('serves tenant routes and stores ingested events under the fence', async () => {
    const a = await node.tenant('node-a');
    const b = await node.tenant('node-b');
    const inst = await createInstall(owner, { tenantId: a.tenant_id, connectorId: 'chatapp', externalId: 'T0RLSNODE' });
    await setBackfill(owner, inst.install_id, 'complete');
    const publisher = new IngestPublisher({
      js: jetstream(node.node.nc),
      names: makeNames(node.namespace),
      shards: node.config.shards,
      blobs: pgBlobPort(owner),
      maxPayload: node.node.nc.info!.max_payload,
      seal: createSeal([TEST_MASTER_KEY]),
    });
    await publisher.publish({
      installId: inst.install_id,
      tenantId: a.tenant_id,
      connectorId: 'chatapp',
      id: 'message:C1:1700000900.000001',
      kind: 'message',
      occurredAt: null,
      payload: { channel_id: 'C1', channel_type: 'channel', ts: '1700000900.000001', user: 'U1', text: 'fenced' },
    });
    const get = (path: string, t: typeof a) => fetch(`${node.url}${path}`, { headers: t.auth });
    const end = Date.now() + 20_000;
    for (;;) {
      const res = await get(`/api/v1/connectors/installs/${inst.install_id}/events`, a);
      expect(res.status).toBe(200);
      if (((await res.json()) as { events: unknown[] }).events.length === 1) break;
      if (Date.now() > end) throw new Error('the event never became visible to its tenant');
      await new Promise((r) => setTimeout(r, 100));
    }
    const listed = (await (await get('/api/v1/connectors/installs', a)).json()) as { installs: unknown[] };
    expect(listed.installs).toHaveLength(1);
    expect((await get(`/api/v1/connectors/installs/${inst.install_id}`, b)).status).toBe(404);
    const nodes = (await (await get('/api/v1/graph/nodes', a)).json()) as { nodes: unknown[] };
    expect(nodes.nodes.length).toBeGreaterThan(0);
    expect(((await (await get('/api/v1/graph/nodes', b)).json()) as { nodes: unknown[] }).nodes).toEqual([]);
  });
});
