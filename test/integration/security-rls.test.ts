/**
 * The database fence (migrations 012, 013, README "Security model"), as the service's two
 * plain login roles (the suite's own `postgres` is a superuser and bypasses row-level
 * security): as the tenant login, a query with no tenant filter, run in a tenant scope,
 * sees only that tenant's rows; with no scope it sees nothing; writes for another tenant
 * are refused; and nothing the login can run (the old `app.scope` setting, SET ROLE)
 * widens that. The nodes' login sees every tenant, dead letters and blobs included. Then a
 * whole node runs as these roles (migrations as the owner through DATABASE_MIGRATE_URL)
 * and its tenant routes and ingest path work.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstream } from '@nats-io/jetstream';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { createSeal } from '../../src/runtime/seal.js';
import { ensureAppRole } from '../../src/store/app-role.js';
import { getBlob, putBlob } from '../../src/store/blobs.js';
import { createPool, withTx } from '../../src/store/db.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { openTenantRolePool, tenantRoleUrl } from '../../src/store/tenant-role.js';
import {
  readTenantFenceKey,
  runInTenantScope,
  tenantBindProof,
  tenantScopedPool,
} from '../../src/store/tenant-scope.js';
import { createTenant } from '../../src/store/tenants.js';
import { dropAppRoles } from '../support/app-roles.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

const role = `connectors_rls_${randomBytes(4).toString('hex')}`;
let appUrl: string;
let owner: pg.Pool;
const pools: pg.Pool[] = [];
const poolOf = (url: string) => {
  const p = createPool(url, { max: 1 });
  pools.push(p);
  return p;
};
/** The tenant routes' login (src/store/tenant-role.ts). */
const tenantPool = () => poolOf(tenantRoleUrl(appUrl));
/** The nodes' own login: ingest, walkers, actors. */
const systemPool = () => poolOf(appUrl);

beforeAll(async () => {
  appUrl = await ensureAppRole(testDatabaseUrl(), role, randomBytes(12).toString('hex'));
  owner = createPool(testDatabaseUrl(), { max: 2 });
});
afterAll(async () => {
  for (const p of pools) await p.end();
  await owner?.end();
  await dropAppRoles(role);
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
  await owner.query(
    `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id)
     VALUES ($1, 'chat.message', 'C1:1', 'chatapp', $2)`,
    [t.tenant_id, inst.install_id],
  );
  await owner.query(
    `INSERT INTO idempotency_keys (tenant_id, key, fingerprint, locked_until) VALUES ($1, 'k1', '\\x00', now())`,
    [t.tenant_id],
  );
  return { ...t, install: inst };
}

/** What the tenant login sees of `t`'s rows, table by table, on connection `c`. */
async function visibleOf(c: pg.PoolClient, t: { tenant_id: string }) {
  const seen: Record<string, number> = {};
  for (const table of ['tenants', 'installs', 'events', 'graph_nodes', 'idempotency_keys']) {
    const { rows } = await c.query(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [t.tenant_id]);
    seen[table] = rows[0].n;
  }
  return seen;
}
const NOTHING = { tenants: 0, installs: 0, events: 0, graph_nodes: 0, idempotency_keys: 0 };
const ONE_EACH = { tenants: 1, installs: 1, events: 1, graph_nodes: 1, idempotency_keys: 1 };

describe('row-level security as the application role', () => {
  it('an unfiltered query sees only the scoped tenant; no scope sees nothing; foreign writes fail', async () => {
    const a = await seedTenant('rls-a');
    const b = await seedTenant('rls-b');
    const scoped = tenantScopedPool(tenantPool(), await readTenantFenceKey(owner));
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
    const plain = tenantPool();
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

    // The nodes' login sees both.
    const system = systemPool();
    const both = await system.query('SELECT tenant_id FROM installs WHERE tenant_id = ANY($1)', [
      [a.tenant_id, b.tenant_id],
    ]);
    expect(both.rowCount).toBe(2);
    // And the App-installation table stays closed to the role (spec §2.3).
    await expect(system.query('SELECT * FROM codehost_app_installations')).rejects.toMatchObject({ code: '42501' });
  });
});

describe('a client checked out of the fenced pool', () => {
  it('is fenced for the scope it was taken in: alone, in its transactions and under withTx; none outside one', async () => {
    const a = await seedTenant('connect-a');
    await seedTenant('connect-b');
    const scoped = tenantScopedPool(tenantPool(), await readTenantFenceKey(owner));
    const tenantsSeen = async (q: { query: pg.Pool['query'] }) =>
      (await q.query<{ tenant_id: string }>('SELECT DISTINCT tenant_id FROM installs')).rows.map((r) => r.tenant_id);
    await runInTenantScope(a.tenant_id, async () => {
      const c = await scoped.connect();
      try {
        expect(await tenantsSeen(c)).toEqual([a.tenant_id]);
        await c.query('BEGIN');
        expect(await tenantsSeen(c)).toEqual([a.tenant_id]);
        await c.query('SAVEPOINT s');
        await c.query('ROLLBACK TO SAVEPOINT s');
        expect(await tenantsSeen(c)).toEqual([a.tenant_id]);
        await c.query('COMMIT');
        expect(await tenantsSeen(c)).toEqual([a.tenant_id]);
      } finally {
        c.release();
      }
      expect(await withTx(scoped, (tx) => tenantsSeen(tx))).toEqual([a.tenant_id]);
    });
    await expect(scoped.connect()).rejects.toMatchObject({ code: 'internal' });
    // Released, the connection is the tenant login's plain one again: no tenant bound.
    const plain = await runInTenantScope(a.tenant_id, async () => {
      const c = await scoped.connect();
      c.release();
      return c;
    });
    expect((await plain.query('SELECT count(*)::int AS n FROM installs')).rows[0].n).toBe(0);
  });
});

describe('the tenant login cannot widen its view (migration 013)', () => {
  it('neither the old session setting nor SET ROLE reaches other tenants', async () => {
    const a = await seedTenant('widen-a');
    const c = await tenantPool().connect();
    try {
      await c.query("SELECT set_config('app.scope', 'system', false)");
      const all = await c.query('SELECT tenant_id FROM installs WHERE tenant_id = $1', [a.tenant_id]);
      expect(all.rowCount).toBe(0);
      await expect(c.query('SET ROLE connectors_app')).rejects.toMatchObject({ code: '42501' });
      await expect(c.query(`SET ROLE ${role}`)).rejects.toMatchObject({ code: '42501' });
      // Tables outside the fence are not granted to it at all.
      for (const table of ['schema_migrations', 'codehost_app_installations']) {
        await expect(c.query(`SELECT 1 FROM ${table} LIMIT 1`), table).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      c.release(true);
    }
  });

  it('set_config and SET of any setting reach no other tenant: events, nodes, idempotency keys, installs (030)', async () => {
    const a = await seedTenant('forge-a');
    const b = await seedTenant('forge-b');
    const c = await tenantPool().connect();
    try {
      // The setting the fence read until 030, set every way the login can.
      await c.query("SELECT set_config('app.tenant_id', $1, false)", [b.tenant_id]);
      await c.query(`SET app.tenant_id = '${b.tenant_id}'`);
      expect(await visibleOf(c, b)).toEqual(NOTHING);
      const moved = await c.query(`UPDATE installs SET display_name = 'taken' WHERE install_id = $1`, [
        b.install.install_id,
      ]);
      expect(moved.rowCount).toBe(0);

      // Inside a transaction the service bound to A (as the tenant pool does), an injected
      // statement that names B, or forges B's binding, still sees A's rows only.
      const key = await readTenantFenceKey(owner);
      await c.query('BEGIN');
      await c.query('SELECT app_bind_tenant($1, $2)', [a.tenant_id, tenantBindProof(key, a.tenant_id)]);
      expect(await visibleOf(c, a)).toEqual(ONE_EACH);
      const ownBinding = (await c.query("SELECT current_setting('app.tenant_binding') AS b")).rows[0].b as string;
      await c.query("SELECT set_config('app.tenant_id', $1, true)", [b.tenant_id]);
      await c.query("SELECT set_config('app.tenant_binding', $1, true)", [
        `${b.tenant_id}.${ownBinding.split('.')[1]}`,
      ]);
      expect(await visibleOf(c, b)).toEqual(NOTHING);
      await expect(
        c.query(`UPDATE installs SET display_name = 'taken' WHERE install_id = $1 RETURNING 1`, [b.install.install_id]),
      ).resolves.toMatchObject({ rowCount: 0 });
      await c.query('COMMIT');

      // A's own binding, replayed in a later transaction, verifies no more (it seals one transaction).
      await c.query('BEGIN');
      await c.query("SELECT set_config('app.tenant_binding', $1, true)", [ownBinding]);
      expect(await visibleOf(c, a)).toEqual(NOTHING);
      await c.query('COMMIT');

      // Binding takes the proof only the service can make; the secret behind it is out of reach.
      await expect(c.query('SELECT app_bind_tenant($1, $2)', [b.tenant_id, Buffer.alloc(32)])).rejects.toMatchObject({
        code: '42501',
      });
      await expect(
        c.query('SELECT app_bind_tenant($1, $2)', [b.tenant_id, tenantBindProof(key, a.tenant_id)]),
      ).rejects.toMatchObject({ code: '42501' });
      for (const sql of [
        'SELECT secret FROM tenant_fence_key',
        "SELECT tenant_fence_hmac('bind:x')",
        `SELECT tenant_fence_seal('${b.tenant_id}')`,
      ]) {
        await expect(c.query(sql), sql).rejects.toMatchObject({ code: '42501' });
      }
      // Nor can it plant temporary objects on the pooled connection for later transactions.
      await expect(c.query('CREATE TEMP TABLE installs (tenant_id uuid)')).rejects.toMatchObject({ code: '42501' });
    } finally {
      c.release(true);
    }
    const untouched = await owner.query('SELECT display_name FROM installs WHERE install_id = $1', [
      b.install.install_id,
    ]);
    expect(untouched.rows[0].display_name).not.toBe('taken');
  });

  it('dead letters and blobs are fenced per tenant; the nodes login sees them all', async () => {
    const a = await seedTenant('dl-a');
    const b = await seedTenant('dl-b');
    const system = systemPool();
    for (const t of [a, b, null]) {
      await recordDeadLetter(system, {
        stream: 'S',
        streamSeq: 1,
        subject: 'x',
        installId: t ? t.install.install_id : randomUUID(),
        deliveries: 5,
        error: 'boom',
        payload: new Uint8Array([1]),
      });
    }
    const scoped = tenantScopedPool(tenantPool(), await readTenantFenceKey(owner));
    const seen = await runInTenantScope(a.tenant_id, () => scoped.query('SELECT DISTINCT tenant_id FROM dead_letters'));
    expect(seen.rows).toEqual([{ tenant_id: a.tenant_id }]);
    const everyone = await system.query('SELECT count(*)::int AS n FROM dead_letters WHERE tenant_id = ANY($1)', [
      [a.tenant_id, b.tenant_id],
    ]);
    expect(everyone.rows[0].n).toBe(2);

    const blobA = await putBlob(system, Buffer.from('a'), a.tenant_id);
    const blobB = await putBlob(system, Buffer.from('b'), b.tenant_id);
    expect((await getBlob(system, blobB))?.toString()).toBe('b');
    // The tenant login reads blobs (a dead letter's event may be one); the policy keeps B's out.
    const refs = await runInTenantScope(a.tenant_id, () =>
      scoped.query('SELECT ref FROM ingest_blobs WHERE ref = ANY($1)', [[blobA, blobB]]),
    );
    expect(refs.rows).toEqual([{ ref: blobA }]);
  });
});

describe('opening the tenant routes pool', () => {
  it('a fenced nodes login without its tenant login refuses; an unfenced one shares its own', async () => {
    const lone = `connectors_lone_${randomBytes(4).toString('hex')}`;
    await owner.query(`CREATE ROLE ${lone} LOGIN IN ROLE connectors_app`);
    const url = new URL(testDatabaseUrl());
    url.username = lone;
    const made: pg.Pool[] = [];
    const make = (u: string) => {
      const p = createPool(u, { max: 1 });
      made.push(p);
      return p;
    };
    const warned: string[] = [];
    try {
      const open = openTenantRolePool(url.toString(), poolOf(url.toString()), make, (_m, r) => warned.push(r));
      await expect(open).rejects.toMatchObject({ code: 'internal', message: expect.stringContaining('refused') });
      // A tenant login outside connectors_tenant has no table grants: refused at start too.
      await owner.query(`CREATE ROLE ${lone}_tenant LOGIN`);
      const ungranted = openTenantRolePool(url.toString(), poolOf(url.toString()), make, (_m, r) => warned.push(r));
      await expect(ungranted).rejects.toMatchObject({ code: 'internal', message: expect.stringContaining('may not') });
      // The suite's superuser bypasses row-level security anyway: the pool falls back to it.
      const shared = await openTenantRolePool(testDatabaseUrl(), owner, make, (_m, r) => warned.push(r));
      expect((await shared.query('SELECT current_user AS u')).rows[0].u).toBe(new URL(testDatabaseUrl()).username);
      expect(warned).toEqual([`${new URL(testDatabaseUrl()).username}_tenant`]);
    } finally {
      for (const p of made) await p.end().catch(() => undefined);
      await owner.query(`DROP ROLE IF EXISTS ${lone}_tenant`);
      await owner.query(`DROP ROLE ${lone}`);
    }
  });
});

describe('a tenant login that may plant objects', () => {
  it('is named at start: temporary objects would resolve before the tables in later transactions', async () => {
    const db = new URL(testDatabaseUrl()).pathname.slice(1);
    const warned: string[] = [];
    const make = (u: string) => poolOf(u);
    await owner.query(`GRANT TEMPORARY ON DATABASE ${db} TO ${role}_tenant`);
    try {
      await openTenantRolePool(appUrl, systemPool(), make, (m) => warned.push(m));
    } finally {
      await owner.query(`REVOKE TEMPORARY ON DATABASE ${db} FROM ${role}_tenant`);
    }
    expect(warned).toEqual([expect.stringContaining(`REVOKE TEMPORARY ON DATABASE ${db} FROM PUBLIC`)]);
    // Migration 030 revoked it from PUBLIC: without the grant above, nothing to say.
    warned.length = 0;
    await openTenantRolePool(appUrl, systemPool(), make, (m) => warned.push(m));
    expect(warned).toEqual([]);
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
    await until(
      'the event visible to its tenant',
      async () => {
        const res = await get(`/api/v1/connectors/installs/${inst.install_id}/events`, a);
        expect(res.status).toBe(200);
        return ((await res.json()) as { events: unknown[] }).events.length === 1;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
    const listed = (await (await get('/api/v1/connectors/installs', a)).json()) as { installs: unknown[] };
    expect(listed.installs).toHaveLength(1);
    expect((await get(`/api/v1/connectors/installs/${inst.install_id}`, b)).status).toBe(404);
    const nodes = (await (await get('/api/v1/graph/nodes', a)).json()) as { nodes: unknown[] };
    expect(nodes.nodes.length).toBeGreaterThan(0);
    expect(((await (await get('/api/v1/graph/nodes', b)).json()) as { nodes: unknown[] }).nodes).toEqual([]);
    // A dead letter whose event sits in a blob: listed to its tenant alone, read through the fence.
    const blob = Buffer.from(JSON.stringify({ type: 'event', event: { id: 'big:1', kind: 'message' } }));
    const ref = await putBlob(owner, blob, a.tenant_id);
    await recordDeadLetter(owner, {
      stream: 'S',
      streamSeq: 9,
      subject: 'x',
      installId: inst.install_id,
      deliveries: 5,
      error: 'boom',
      payload: Buffer.from(JSON.stringify({ type: 'blob-ref', ref })),
    });
    const dl = (t: typeof a) =>
      get('/api/v1/dead-letters', t).then((r) => r.json() as Promise<{ dead_letters: unknown[] }>);
    expect((await dl(a)).dead_letters).toEqual([
      expect.objectContaining({
        tenant_id: a.tenant_id,
        install_id: inst.install_id,
        event_id: 'big:1',
        kind: 'message',
      }),
    ]);
    expect((await dl(b)).dead_letters).toEqual([]);
    // The tenant routes' connections are the tenant login's, not the nodes' own (other files'
    // nodes share the database as the superuser, hence the filter on this file's two logins).
    const logins = await owner.query<{ usename: string }>(
      `SELECT DISTINCT usename FROM pg_stat_activity
        WHERE application_name = 'connector-service-tenant' AND usename = ANY($1)`,
      [[role, `${role}_tenant`]],
    );
    expect(logins.rows).toEqual([{ usename: `${role}_tenant` }]);
  });
});
