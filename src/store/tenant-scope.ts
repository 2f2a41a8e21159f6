/**
 * The tenant half of the database fence (migrations 012, 013, 030): inside
 * `runInTenantScope`, every query of a tenant-scoped pool runs in its own transaction that
 * first binds the caller's tenant (`app_bind_tenant`, migration 030), so row-level security
 * shows it only that tenant's rows whatever its WHERE clause says. Outside a scope such a
 * pool refuses to query at all: a tenant route that lost its scope fails, never widens.
 *
 * A client checked out with `connect()` inside a scope is fenced the same way until it is
 * released, so `withTx` on this pool runs bound too.
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

type RawQuery = (text: string | pg.QueryConfig, values?: unknown[]) => Promise<pg.QueryResult>;

/**
 * Runs one statement in its own transaction bound by `bind`: its result, or what it threw
 * and, when the connection cannot be reused, why (db.ts rollbackOrDrop).
 */
async function inBoundTransaction(
  query: RawQuery,
  bind: () => Promise<unknown>,
  text: string | pg.QueryConfig,
  values: unknown[] | undefined,
): Promise<{ result: pg.QueryResult } | { err: unknown; broken: Error | undefined }> {
  try {
    await query('BEGIN');
    await bind();
    const result = await query(text, values);
    await query('COMMIT');
    return { result };
  } catch (err) {
    return { err, broken: await rollbackOrDrop({ query: (t: string) => query(t) }, err) };
  }
}

/** Statements that open or end a transaction, as a fenced client's callers write them. */
const OPENS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const ENDS = /^\s*(COMMIT|END|ABORT|PREPARE\s+TRANSACTION|ROLLBACK(?!\s+(WORK\s+|TRANSACTION\s+)?TO\b))\b/i;

/**
 * A client of the tenant login fenced for `tenantId` until it is released: a transaction it
 * opens (`BEGIN`, as `withTx` does) is bound right after it begins, and a statement it runs
 * outside one runs in its own bound transaction, like the pool's `query`. What the caller
 * writes is only read to see where its transactions start and end; a statement taken for
 * the wrong one runs unbound and sees nothing (fails closed, never wider).
 */
function fencedClient(client: pg.PoolClient, bind: (q: RawQuery) => Promise<unknown>): pg.PoolClient {
  const ownQuery = Object.prototype.hasOwnProperty.call(client, 'query');
  const original = client.query;
  const raw = client.query.bind(client) as RawQuery;
  const release = client.release;
  let open = false;
  let broken: Error | undefined;
  const fenced: RawQuery = async (text, values) => {
    const sql = typeof text === 'string' ? text : text.text;
    if (open) {
      if (ENDS.test(sql)) open = false;
      return raw(text, values);
    }
    if (OPENS.test(sql)) {
      const begun = await raw(text, values);
      open = true;
      await bind(raw);
      return begun;
    }
    const ran = await inBoundTransaction(raw, () => bind(raw), text, values);
    if ('result' in ran) return ran.result;
    broken ??= ran.broken;
    throw ran.err;
  };
  client.query = fenced as unknown as pg.PoolClient['query'];
  client.release = (err?: Error | boolean) => {
    // Back in the pool the client is the tenant login's plain one again; left inside a
    // transaction, it is not reused at all.
    if (ownQuery) client.query = original;
    else Reflect.deleteProperty(client, 'query');
    client.release = release;
    const drop = err ?? broken ?? (open ? new Error('released inside a transaction') : undefined);
    return release(drop);
  };
  return client;
}

/**
 * Turns `pool` (a pool of the tenant login, src/store/tenant-role.ts, which row-level
 * security confines to the transaction's bound tenant) into a tenant-scoped one: its
 * `query` runs each statement in a transaction bound to the scope's tenant, and a client
 * from its `connect()` is fenced for that tenant until released (`fencedClient`). Both
 * refuse outside a tenant scope.
 */
export function tenantScopedPool(pool: pg.Pool, fenceKey: Buffer): pg.Pool {
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  const scopeTenant = (): string => {
    const tenantId = current.getStore();
    if (!tenantId) throw new Internal('a tenant-scoped query ran outside a tenant scope');
    return tenantId;
  };
  const binder = (tenantId: string) => {
    const proof = tenantBindProof(fenceKey, tenantId);
    return (q: RawQuery) => q('SELECT app_bind_tenant($1, $2)', [tenantId, proof]);
  };
  const scoped = async (text: string | pg.QueryConfig, values?: unknown[]) => {
    const bind = binder(scopeTenant());
    const client = await connect();
    const raw = client.query.bind(client) as RawQuery;
    const ran = await inBoundTransaction(raw, () => bind(raw), text, values);
    client.release('result' in ran ? undefined : ran.broken);
    if ('result' in ran) return ran.result;
    throw ran.err;
  };
  const fencedConnect = async () => {
    const bind = binder(scopeTenant());
    return fencedClient(await connect(), bind);
  };
  pool.query = scoped as unknown as pg.Pool['query'];
  pool.connect = fencedConnect as unknown as pg.Pool['connect'];
  return pool;
}
