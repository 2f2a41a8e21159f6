/**
 * The tenant half of the database fence (migrations 012, 013, 030): inside
 * `runInTenantScope`, every query of a tenant-scoped pool runs in its own transaction that
 * first binds the caller's tenant (`app_bind_tenant`, migration 030), so row-level security
 * shows it only that tenant's rows whatever its WHERE clause says. Outside a scope such a
 * pool refuses to query at all: a tenant route that lost its scope fails, never widens.
 *
 * Binding takes a proof only the service can make: HMAC-SHA256 of `bind:<tenant>` under the
 * database's fence secret, which the nodes' own login reads once (`readTenantFenceKey`) and
 * the tenant login may not read. So SQL run as the tenant login (one injected statement)
 * cannot bind another tenant, and no setting it can change (`set_config`, `SET`) names one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHmac } from 'node:crypto';
import type pg from 'pg';
import { Internal } from '../errors.js';
import { isUuid, rollbackOrDrop, type Queryable } from './db.js';

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

/** The database's fence secret (migration 030), read by a login that may (the nodes' own). */
export async function readTenantFenceKey(q: Queryable): Promise<Buffer> {
  const { rows } = await q.query<{ secret: Buffer }>('SELECT secret FROM tenant_fence_key');
  if (!rows[0]) throw new Internal('tenant_fence_key is empty: the migrations have not run (030)');
  return rows[0].secret;
}

/** The proof `app_bind_tenant` checks: HMAC-SHA256 of `bind:<tenant>` under the fence secret. */
export function tenantBindProof(fenceKey: Buffer, tenantId: string): Buffer {
  return createHmac('sha256', fenceKey).update(`bind:${tenantId.toLowerCase()}`).digest();
}

/**
 * Turns `pool` (a pool of the tenant login, src/store/tenant-role.ts, which row-level
 * security confines to the transaction's bound tenant) into a tenant-scoped one: its
 * `query` runs as described above. `connect()` is left alone and its clients see no tenant
 * row (nothing bound); use `query`.
 */
export function tenantScopedPool(pool: pg.Pool, fenceKey: Buffer): pg.Pool {
  const connect = pool.connect.bind(pool);
  const scoped = async (text: string | pg.QueryConfig, values?: unknown[]) => {
    const tenantId = current.getStore();
    if (!tenantId) throw new Internal('a tenant-scoped query ran outside a tenant scope');
    const client = await connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query('SELECT app_bind_tenant($1, $2)', [tenantId, tenantBindProof(fenceKey, tenantId)]);
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
