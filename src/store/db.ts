/**
 * Postgres access: the pool, the `Queryable` every repository takes first, and `withTx`.
 *
 * Repositories are plain functions `(q: Queryable, ...)` so a caller decides whether a
 * call runs alone (the pool) or inside a transaction (a client from `withTx`): the install
 * actor writes an event and its graph projection in one transaction (ARCHITECTURE
 * "Inbound" step 2) with the same functions the edge calls on the pool.
 */
import { backoffMs } from '../backoff.js';
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { spendRequestBudget } from './budgeted-pool.js';

/** Between tries of a transaction that met a serialization failure or deadlock (backoff.ts). */
const TX_RETRY = { firstMs: 20, capMs: 160 };

export type Queryable = Pool | PoolClient;

export interface PoolOptions {
  /** Connections per node; several nodes share one server, so keep it modest. */
  max?: number;
  /** Server-side cap on any one statement; a stuck query fails instead of pinning a client. */
  statementTimeoutMs?: number;
  /** How long to wait for a connection (INTERFACE §9.3: 2 s on request paths). Default 2000. */
  connectionTimeoutMs?: number;
  /** Client-side cap on one query, also when the server never answers (a stalled network). */
  queryTimeoutMs?: number;
  /** Shown in pg_stat_activity so an operator can tell nodes apart. */
  applicationName?: string;
  /**
   * An idle client lost its connection (server restart, network). pg's Pool emits 'error'
   * for it, and an unhandled 'error' would crash the process; the pool already drops the
   * client, so the caller only needs to hear about it (usually: log a warning).
   */
  onIdleError?: (err: Error) => void;
  /**
   * The pool of request paths (INTERFACE §9.3): its connection waits and statements spend the
   * running request's 2 s budget (src/wait-budget.ts, budgeted-pool.ts), not 2 s each.
   */
  requestBudget?: boolean;
}

export function createPool(url: string, opts: PoolOptions = {}): Pool {
  const statementTimeoutMs = opts.statementTimeoutMs ?? 30_000;
  const idleInTxMs = Math.max(60_000, statementTimeoutMs * 2);
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: opts.connectionTimeoutMs ?? 2_000,
    ...(opts.queryTimeoutMs === undefined ? {} : { query_timeout: opts.queryTimeoutMs }),
    application_name: (opts.applicationName ?? 'connector-service').slice(0, 63),
    // Session defaults sent in the startup packet: `RESET` returns to them, and a
    // transaction left open by a bug is ended by the server instead of holding locks.
    options: `-c statement_timeout=${statementTimeoutMs} -c idle_in_transaction_session_timeout=${idleInTxMs}`,
  });
  pool.on('error', (err) => opts.onIdleError?.(err));
  // A checked-out client (`withTx`) whose connection drops (a Postgres restart, a failover)
  // emits 'error' as well, and the Pool listens only while a client is idle: with no listener
  // of its own, that 'error' ended the process. Its queries fail with the error already (the
  // caller hears it there) and `withTx` drops such a client on release, so this only keeps
  // the process up.
  pool.on('connect', (client) => client.on('error', () => undefined));
  if (opts.requestBudget) spendRequestBudget(pool, opts.queryTimeoutMs ?? statementTimeoutMs);
  return pool;
}

type Isolation = 'read committed' | 'repeatable read' | 'serializable';

export interface TxOptions {
  isolation?: Isolation;
  /** Total tries when Postgres reports a serialization failure or deadlock. */
  maxAttempts?: number;
  /** Other failures worth trying the whole transaction again for (e.g. a row created concurrently). */
  retryOn?: (err: unknown) => boolean;
}

const BEGIN: Record<Isolation, string> = {
  'read committed': 'BEGIN ISOLATION LEVEL READ COMMITTED',
  'repeatable read': 'BEGIN ISOLATION LEVEL REPEATABLE READ',
  serializable: 'BEGIN ISOLATION LEVEL SERIALIZABLE',
};

/** 40001 serialization_failure, 40P01 deadlock_detected: the transaction may simply be re-run. */
const RETRYABLE_SQLSTATE = new Set(['40001', '40P01']);

/**
 * Runs `fn` in one transaction on one client and releases the client whatever happens.
 * On a serialization failure or deadlock the whole of `fn` runs again (up to
 * `maxAttempts`, default 4), so `fn` must do nothing outside the database that cannot be
 * repeated.
 */
export async function withTx<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>, opts: TxOptions = {}): Promise<T> {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 4);
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    // A client whose ROLLBACK failed is in an unknown state: destroy it, never reuse it.
    let broken: Error | undefined;
    try {
      await client.query(opts.isolation ? BEGIN[opts.isolation] : 'BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      broken = await rollbackOrDrop(client, err);
      if (attempt >= maxAttempts) throw err;
      if (!RETRYABLE_SQLSTATE.has(pgErrorCode(err) ?? '') && !opts.retryOn?.(err)) throw err;
    } finally {
      client.release(broken);
    }
    // Jittered backoff so two retrying transactions do not collide again in lockstep.
    await new Promise((r) => setTimeout(r, backoffMs(TX_RETRY, attempt)));
  }
}

/**
 * Ends a failed transaction. Returns the error to release the client with (destroying it),
 * or undefined when it may be reused. A query that outlived `query_timeout` still occupies
 * its connection, so a ROLLBACK would only queue behind it and wait out a second timeout
 * (INTERFACE §9.3's 2 s becoming 4): such a client is dropped at once instead, and the
 * server rolls back when the connection goes.
 */
export async function rollbackOrDrop(
  client: { query(text: string): Promise<unknown> },
  err: unknown,
): Promise<Error | undefined> {
  // pg gives this error no code; its message is fixed (pg/lib/client.js).
  if (err instanceof Error && err.message === 'Query read timeout') return err;
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (rollbackErr) {
    return rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
  }
}

/** The SQLSTATE of a pg error, if it is one. */
export function pgErrorCode(err: unknown): string | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}

/** The constraint a pg error names (unique and foreign-key violations). */
export function pgConstraint(err: unknown): string | undefined {
  if (err && typeof err === 'object' && 'constraint' in err && typeof err.constraint === 'string') {
    return err.constraint;
  }
  return undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Ids reach the store from URLs; a malformed one must read as "absent", not as a pg
 * error 22P02 (INTERFACE §2: a foreign or unknown install id is the same 404).
 */
export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID.test(s);
}

/** INTERFACE §2: timestamps are ISO 8601 UTC strings. */
export function toIso(d: Date): string;
export function toIso(d: Date | null): string | null;
export function toIso(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}
