/**
 * The tenant half of the database fence (migrations 012, 013): inside `runInTenantScope`, every
 * query of a tenant-scoped pool runs in its own transaction that first sets
 * `app.tenant_id` (`set_config(..., true)`, i.e. `SET LOCAL`), so row-level security shows
 * it only that tenant's rows whatever its WHERE clause says. Outside a scope such a pool
 * refuses to query at all: a tenant route that lost its scope fails, never widens.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';
import { Internal } from '../errors.js';
import { isUuid, rollbackOrDrop } from './db.js';

const current = new AsyncLocalStorage<string>();

/** Runs `fn` (and everything it awaits) as `tenantId`. */
export function runInTenantScope<T>(tenantId: string, fn: () => T): T {
  if (!isUuid(tenantId)) throw new Internal('tenant scope needs a tenant id');
  return current.run(tenantId, fn);
}

/** The tenant of the running scope, or null. */
export function scopedTenant(): string | null {
  return current.getStore() ?? null;
}

/**
 * Turns `pool` (a pool of the tenant login, src/store/tenant-role.ts, which row-level
 * security confines to the transaction's tenant) into a tenant-scoped one: its `query`
 * runs as described above. `connect()` is left alone and its clients see no tenant row
 * (nothing set); use `query`.
 */
export function tenantScopedPool(pool: pg.Pool): pg.Pool {
  const connect = pool.connect.bind(pool);
  const scoped = async (text: string | pg.QueryConfig, values?: unknown[]) => {
    const tenantId = current.getStore();
    if (!tenantId) throw new Internal('a tenant-scoped query ran outside a tenant scope');
    const client = await connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('app.tenant_id', $1, true)`, [tenantId]);
      const result = await client.query(text as string, values);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      broken = await rollbackOrDrop(client, err);
      throw err;
    } finally {
      client.release(broken);
    }
  };
  pool.query = scoped as unknown as pg.Pool['query'];
  return pool;
}
