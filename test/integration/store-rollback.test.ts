/**
 * A transaction that fails because Postgres stalled (INTERFACE §9.3: a request waits at
 * most 2 s) ends without a second wait: the client whose query outlived `query_timeout` is
 * dropped instead of sent a ROLLBACK that would queue behind that query for another
 * timeout. Any other failure still rolls back and keeps the connection.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, rollbackOrDrop, withTx } from '../../src/store/db.js';
import { testDatabaseUrl } from '../support/env.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const TIMEOUT_MS = 1_500;
let proxy: TcpProxy;
let pool: pg.Pool;

beforeAll(async () => {
  const db = new URL(testDatabaseUrl());
  proxy = await startTcpProxy(db.hostname, Number(db.port || 5432));
  db.hostname = '127.0.0.1';
  db.port = String(proxy.port);
  pool = createPool(db.toString(), { max: 2, queryTimeoutMs: TIMEOUT_MS, connectionTimeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  proxy?.resume();
  await pool?.end();
  await proxy?.close();
});

describe('a failed transaction', () => {
  it('drops a client stalled past query_timeout at once instead of waiting out a ROLLBACK', async () => {
    const client = await pool.connect();
    let dropped: Error | undefined;
    try {
      await client.query('BEGIN');
      proxy.pause();
      const err = await client.query('SELECT 1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      const t0 = Date.now();
      dropped = await rollbackOrDrop(client, err);
      // Not another TIMEOUT_MS: nothing was sent or awaited.
      expect(Date.now() - t0).toBeLessThan(TIMEOUT_MS / 2);
      expect(dropped).toBe(err);
    } finally {
      client.release(dropped ?? true);
      proxy.resume();
    }
  });

  it('still rolls back an SQL error and keeps the connection', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const err = await client.query('SELECT 1/0').catch((e: unknown) => e);
      expect(await rollbackOrDrop(client, err)).toBeUndefined();
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      client.release();
    }
  });

  it('withTx over a stall gives up within one timeout, and the pool serves again after', async () => {
    const t0 = Date.now();
    proxy.pause();
    try {
      await expect(withTx(pool, (tx) => tx.query('SELECT 1'))).rejects.toThrow();
    } finally {
      proxy.resume();
    }
    // BEGIN or the connect waited one timeout; before, a ROLLBACK added a second one.
    expect(Date.now() - t0).toBeLessThan(TIMEOUT_MS * 1.8);
    expect((await withTx(pool, (tx) => tx.query('SELECT 2 AS two'))).rows).toEqual([{ two: 2 }]);
  });
});
