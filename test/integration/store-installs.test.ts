import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/db.js';
import {
  createInstall,
  findActiveInstalls,
  getInstall,
  getInstallById,
  listInstalls,
  setBackfill,
  setInstallStatus,
} from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

let pool: Pool;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 3 });
});
afterAll(async () => {
  await pool.end();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const uniq = () => `X${Math.random().toString(36).slice(2)}`;

describe('installs', () => {
  it('lists the tenant’s installs newest first, filtered by connector', async () => {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'T');
    const other = await createTenant(pool, TEST_MASTER_KEY, 'O');
    const first = await createInstall(pool, {
      tenantId: tenant_id,
      connectorId: 'chatapp',
      externalId: uniq(),
      displayName: 'WS',
    });
    const second = await createInstall(pool, { tenantId: tenant_id, connectorId: 'codehost', externalId: '42' });
    await createInstall(pool, { tenantId: other.tenant_id, connectorId: 'chatapp', externalId: uniq() });

    expect(first).toMatchObject({ tenant_id, connector_id: 'chatapp', status: 'active', display_name: 'WS' });
    expect(first.created_at).toMatch(ISO);
    expect(first.backfill).toEqual({ state: 'pending', updated_at: first.created_at });

    const all = await listInstalls(pool, tenant_id);
    expect(all.map((i) => i.install_id)).toEqual([second.install_id, first.install_id]);
    expect((await listInstalls(pool, tenant_id, 'chatapp')).map((i) => i.install_id)).toEqual([first.install_id]);
    expect(await listInstalls(pool, 'garbage')).toEqual([]);
  });

  it('gets an install of the tenant only; foreign or malformed ids read as null', async () => {
    const a = await createTenant(pool, TEST_MASTER_KEY, 'A');
    const b = await createTenant(pool, TEST_MASTER_KEY, 'B');
    const inst = await createInstall(pool, { tenantId: a.tenant_id, connectorId: 'chatapp', externalId: uniq() });
    expect(await getInstall(pool, a.tenant_id, inst.install_id)).toEqual(inst);
    expect(await getInstall(pool, b.tenant_id, inst.install_id)).toBeNull();
    expect(await getInstall(pool, a.tenant_id, 'not-a-uuid')).toBeNull();
    expect(await getInstall(pool, a.tenant_id, "'; DROP TABLE installs; --")).toBeNull();
    expect(await getInstall(pool, a.tenant_id, '00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(await getInstallById(pool, inst.install_id)).toEqual(inst);
    expect(await getInstallById(pool, 'nope')).toBeNull();
  });

  it('allows one active install per external id and tenant, and reinstall after uninstall', async () => {
    const a = await createTenant(pool, TEST_MASTER_KEY, 'A');
    const b = await createTenant(pool, TEST_MASTER_KEY, 'B');
    const ext = uniq();
    const one = await createInstall(pool, { tenantId: a.tenant_id, connectorId: 'codehost', externalId: ext });
    await expect(
      createInstall(pool, { tenantId: a.tenant_id, connectorId: 'codehost', externalId: ext }),
    ).rejects.toMatchObject({
      code: 'already_installed',
    });
    // Another tenant may bind the same installation (INTERFACE §3 fan-out).
    const two = await createInstall(pool, { tenantId: b.tenant_id, connectorId: 'codehost', externalId: ext });
    expect((await findActiveInstalls(pool, 'codehost', ext)).map((i) => i.install_id)).toEqual([
      one.install_id,
      two.install_id,
    ]);

    const gone = await setInstallStatus(pool, one.install_id, 'uninstalled');
    expect(gone?.status).toBe('uninstalled');
    // Idempotent: a second uninstall changes nothing, updated_at included.
    expect((await setInstallStatus(pool, one.install_id, 'uninstalled'))?.updated_at).toBe(gone?.updated_at);
    expect((await findActiveInstalls(pool, 'codehost', ext)).map((i) => i.install_id)).toEqual([two.install_id]);
    const again = await createInstall(pool, { tenantId: a.tenant_id, connectorId: 'codehost', externalId: ext });
    await expect(setInstallStatus(pool, one.install_id, 'active')).rejects.toMatchObject({ code: 'already_installed' });
    expect(again.install_id).not.toBe(one.install_id);
    expect(await setInstallStatus(pool, '00000000-0000-4000-8000-000000000000', 'active')).toBeNull();
  });

  it('refuses an unknown tenant', async () => {
    await expect(
      createInstall(pool, {
        tenantId: '00000000-0000-4000-8000-000000000000',
        connectorId: 'chatapp',
        externalId: uniq(),
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('stores backfill state and progress; progress cannot override the named fields', async () => {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'T');
    const inst = await createInstall(pool, { tenantId: tenant_id, connectorId: 'chatapp', externalId: uniq() });
    expect(
      await setBackfill(pool, inst.install_id, 'running', { channels_done: 3, skipped: ['C1\u0000'], state: 'x' }),
    ).toBe(true);
    const got = await getInstall(pool, tenant_id, inst.install_id);
    expect(got?.backfill).toMatchObject({ state: 'running', channels_done: 3, skipped: ['C1'] });
    expect(got?.backfill.updated_at).toMatch(ISO);
    expect(await setBackfill(pool, 'nope', 'complete')).toBe(false);
  });

  it('an uninstall ends an unfinished backfill as failed, keeping its progress; a finished one stays', async () => {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'T');
    const running = await createInstall(pool, { tenantId: tenant_id, connectorId: 'codehost', externalId: uniq() });
    await setBackfill(pool, running.install_id, 'running', { prs_done: 7 });
    await setInstallStatus(pool, running.install_id, 'uninstalled');
    expect((await getInstall(pool, tenant_id, running.install_id))?.backfill).toMatchObject({
      state: 'failed',
      prs_done: 7,
      reason: 'install uninstalled',
    });

    const chat = await createInstall(pool, { tenantId: tenant_id, connectorId: 'chatapp', externalId: uniq() });
    await setInstallStatus(pool, chat.install_id, 'uninstalled');
    expect((await getInstall(pool, tenant_id, chat.install_id))?.backfill).toMatchObject({
      state: 'failed',
      last_error: 'install uninstalled',
    });

    const done = await createInstall(pool, { tenantId: tenant_id, connectorId: 'chatapp', externalId: uniq() });
    await setBackfill(pool, done.install_id, 'complete', { messages: 3 });
    await setInstallStatus(pool, done.install_id, 'uninstalled');
    expect((await getInstall(pool, tenant_id, done.install_id))?.backfill).toMatchObject({
      state: 'complete',
      messages: 3,
    });
  });
});
