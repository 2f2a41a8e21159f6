/**
 * Postgres restarting (or failing over) under a transaction: the connection of a client
 * checked out by `withTx` is reset. The transaction fails with the error, the process stays
 * up (an 'error' event with no listener would end it: vitest reports it as an unhandled
 * error), and the pool serves the next transaction on a fresh connection.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, withTx } from '../../src/store/db.js';
import { testDatabaseUrl } from '../support/env.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

let proxy: TcpProxy;
let pool: pg.Pool;
const idleErrors: Error[] = [];

beforeAll(async () => {
  const db = new URL(testDatabaseUrl());
  proxy = await startTcpProxy(db.hostname, Number(db.port || 5432));
  db.hostname = '127.0.0.1';
  db.port = String(proxy.port);
  pool = createPool(db.toString(), { max: 2, onIdleError: (err) => idleErrors.push(err) });
});

afterAll(async () => {
  await pool?.end();
  await proxy?.close();
});

describe('a connection reset', () => {
  it('fails the transaction it cuts, keeps the process up, and the next transaction runs', async () => {
    let inside = false;
    const cut = withTx(pool, async (tx) => {
      await tx.query('SELECT 1');
      inside = true;
      await tx.query('SELECT pg_sleep(5)');
    }).catch((e: unknown) => e);
    await until('the transaction is inside its long query', () => inside, { timeoutMs: 5_000 });
    // Seen running by Postgres itself (on a connection of its own, not through the proxy).
    const direct = new pg.Client({ connectionString: testDatabaseUrl() });
    await direct.connect();
    try {
      await until('Postgres running the long query', async () => {
        const { rows } = await direct.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(5)' AND state = 'active'",
        );
        return rows.length > 0;
      });
    } finally {
      await direct.end();
    }
    proxy.reset();
    const err = await cut;
    expect(err).toBeInstanceOf(Error);
    // The process lived through the client's 'error' event; a new connection serves the next one.
    const { rows } = await withTx(pool, (tx) => tx.query<{ one: number }>('SELECT 1 AS one'));
    expect(rows[0]!.one).toBe(1);
  });

  it('an idle client whose connection is reset is dropped and reported, not fatal', async () => {
    await pool.query('SELECT 1');
    const before = idleErrors.length;
    proxy.reset();
    await until('the idle error reported', () => idleErrors.length > before, { timeoutMs: 5_000 });
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
  });
});
