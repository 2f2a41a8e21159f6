/**
 * A node's Postgres pools (INTERFACE §9.3, README "Security model"): the cross-tenant pool
 * (ingest, fan-out, walkers, actors), the request pool whose every wait gives up after 2 s,
 * and the tenant routes' pool bound by row-level security. Migrations run first, as the
 * schema owner when DATABASE_MIGRATE_URL is set.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { createPool } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { openTenantRolePool } from '../store/tenant-role.js';
import { readTenantFenceKey, tenantScopedPool } from '../store/tenant-scope.js';
import { REQUEST_WAIT_MS } from '../wait-budget.js';
import type { Undo } from './undo.js';

/** INTERFACE §9.3: a request waits at most 2 s for Postgres or NATS, then answers 503. */
export { REQUEST_WAIT_MS };

export type Pool = ReturnType<typeof createPool>;

export interface NodePools {
  pool: Pool;
  requestPool: Pool;
  /**
   * One connection that only answers "does Postgres answer?" for requests awaiting an actor
   * (runtime/liveness-probe.ts): on a pool of its own, so a busy pool's queue never reads as
   * a silent server.
   */
  probePool: Pool;
  onIdleError: (err: Error) => void;
}

export async function openPools(config: Readonly<Config>, log: Logger, undo: Undo): Promise<NodePools> {
  const databaseUrl = config.databaseUrl!;
  const onIdleError = (err: Error) => log.warn({ err }, 'idle Postgres client lost');
  const pool = createPool(databaseUrl, { onIdleError });
  // INTERFACE §9.3: what a request waits on gives up after 2 s in all, also when the server is silent.
  const requestPool = createPool(databaseUrl, {
    max: 10,
    requestBudget: true,
    connectionTimeoutMs: REQUEST_WAIT_MS,
    queryTimeoutMs: REQUEST_WAIT_MS,
    statementTimeoutMs: REQUEST_WAIT_MS,
    onIdleError,
  });
  // A check unanswered past a request's whole budget has told every waiter already; ending it
  // then lets the next one start on a fresh connection rather than join one that died.
  const probePool = createPool(databaseUrl, {
    max: 1,
    connectionTimeoutMs: REQUEST_WAIT_MS,
    queryTimeoutMs: REQUEST_WAIT_MS,
    statementTimeoutMs: REQUEST_WAIT_MS,
    applicationName: 'connector-service probe',
    onIdleError,
  });
  undo.push({ name: 'postgres', fn: () => Promise.all([pool.end(), requestPool.end(), probePool.end()]) });
  // Migrations run as the schema owner (DATABASE_MIGRATE_URL) while the node itself serves
  // as the application role, which row-level security binds (README "Security model").
  const migrator = config.security.migrateDatabaseUrl
    ? createPool(config.security.migrateDatabaseUrl, { max: 1, onIdleError })
    : pool;
  await migrate(migrator)
    .catch((err: unknown) => {
      throw new Error(`Postgres is unreachable or refused the migration: ${(err as Error).message}`, { cause: err });
    })
    .finally(() => (migrator === pool ? undefined : migrator.end()));
  return { pool, requestPool, probePool, onIdleError };
}

/**
 * The tenant routes' pool: they log in as their own role, which cannot see across tenants
 * (migration 013), and each query runs in a transaction bound to the caller's tenant with
 * the fence secret the nodes' login reads (migration 030, tenant-scope.ts).
 */
export async function openTenantPool(
  databaseUrl: string,
  pool: Pool,
  onIdleError: (err: Error) => void,
  log: Logger,
): Promise<Pool> {
  const tenantPool = (url: string) =>
    createPool(url, {
      max: 5,
      applicationName: 'connector-service-tenant',
      requestBudget: true,
      connectionTimeoutMs: REQUEST_WAIT_MS,
      queryTimeoutMs: REQUEST_WAIT_MS,
      statementTimeoutMs: REQUEST_WAIT_MS,
      onIdleError,
    });
  const fenceKey = await readTenantFenceKey(pool);
  return tenantScopedPool(
    await openTenantRolePool(databaseUrl, pool, tenantPool, (msg, role) => log.warn({ role }, msg)),
    fenceKey,
  );
}
