/**
 * Integration (real Postgres): the webhook fan-out cache hears every committed change to
 * the installs table (migration 007's trigger → NOTIFY → listener), whoever made it: an
 * install of a second tenant and an uninstall written straight to the database, as
 * another node would, reach a cache that would otherwise keep its list for an hour.
 *
 * Its own database: the NOTIFY channel is per database, and other test files create
 * installs in the run's shared one at the same time, which would be heard here too.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoundInstallsCache } from '../../src/connectors/codehost/bound-installs-cache.js';
import { boundInstallsFinder } from '../../src/connectors/codehost/find-bound-installs.js';
import { listenInstallChanges } from '../../src/connectors/codehost/listen-install-changes.js';
import { createPool, withTx } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createInstall, setBackfill, setInstallStatus } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testAdminDatabaseUrl, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

const dbName = `${new URL(testDatabaseUrl()).pathname.slice(1)}_notify`.slice(0, 63);
let pool: ReturnType<typeof createPool>;
let cache: BoundInstallsCache;
const heard: string[] = [];
let live = false;
let listener: ReturnType<typeof listenInstallChanges>;
const installation = 6_100_000 + Math.floor(Math.random() * 100_000);

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: testAdminDatabaseUrl() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${dbName}`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${dbName}`;
  pool = createPool(url.toString(), { max: 4 });
  await migrate(pool);
  cache = new BoundInstallsCache({ find: boundInstallsFinder(pool), ttlMs: 3_600_000 });
  listener = listenInstallChanges(pool, pino({ level: 'silent' }), {
    changed: (connectorId) => {
      heard.push(connectorId);
      if (connectorId === 'codehost') cache.invalidate();
    },
    live: (l) => {
      live = l;
      cache.setLive(l);
    },
  });
  await until('the cache listening for changes', async () => live);
});
afterAll(async () => {
  await listener?.stop();
  await pool?.end();
  await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

const tenant = async (name: string) => (await createTenant(pool, TEST_MASTER_KEY, name)).tenant_id;
const ids = async (id: number) => (await cache.lookup(id)).map((i) => i.install_id);
/** Runs `change` and waits until this listener heard its announcement. */
async function heardAfter<T>(change: () => Promise<T>): Promise<T> {
  const before = heard.length;
  const r = await change();
  await until('the change announced to the cache', async () => heard.length > before);
  return r;
}

describe('bound-installs cache on Postgres', () => {
  it('a second tenant’s install and an uninstall made elsewhere reach the cached list', async () => {
    const t = await tenant('a');
    const a = await heardAfter(() =>
      createInstall(pool, { tenantId: t, connectorId: 'codehost', externalId: String(installation) }),
    );
    expect(await ids(installation)).toEqual([a.install_id]);
    expect(cache.size).toBe(1);

    const b = await createInstall(pool, {
      tenantId: await tenant('b'),
      connectorId: 'codehost',
      externalId: String(installation),
    });
    await until('the new install is looked up', async () => (await ids(installation)).length === 2);
    expect(await ids(installation)).toEqual([a.install_id, b.install_id]);

    await setInstallStatus(pool, a.install_id, 'uninstalled');
    await until('the uninstall is looked up', async () => (await ids(installation)).length === 1);
    expect(await ids(installation)).toEqual([b.install_id]);
  });

  it('announces committed status changes only: not backfill progress, not a rolled-back install', async () => {
    const t = await tenant('quiet');
    const inst = await heardAfter(() =>
      createInstall(pool, { tenantId: t, connectorId: 'codehost', externalId: String(installation + 1) }),
    );
    heard.length = 0;
    await setBackfill(pool, inst.install_id, 'complete');
    await withTx(pool, async (tx) => {
      await createInstall(tx, { tenantId: t, connectorId: 'codehost', externalId: String(installation + 2) });
      throw new Error('roll back');
    }).catch(() => undefined);
    // Announcements arrive in commit order: once this one is heard, any earlier one was too.
    await createInstall(pool, { tenantId: t, connectorId: 'chatapp', externalId: `T${randomUUID().slice(0, 8)}` });
    await until('the marker is announced', async () => heard.includes('chatapp'));
    expect(heard).toEqual(['chatapp']);
  });

  it('keeps nothing once it can no longer hear changes', async () => {
    const id = installation + 3;
    await createInstall(pool, { tenantId: await tenant('c'), connectorId: 'codehost', externalId: String(id) });
    await until('the install cached', async () => (await ids(id)).length === 1 && cache.size > 0);
    await listener.stop();
    expect(live).toBe(false);
    expect(cache.size).toBe(0);
    expect(await ids(id)).toHaveLength(1);
    expect(cache.size).toBe(0);
  });
});
