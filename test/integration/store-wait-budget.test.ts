/**
 * A request pool's waits spend the request's budget (INTERFACE §9.3, src/wait-budget.ts,
 * src/store/budgeted-pool.ts), on a real Postgres: statements in a row share it (the one that
 * would end past it is cut, 503 `unavailable`), a connection wait is cut by it too, and
 * outside a request, or once the request has ended, the pool's own bounds apply.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAppError } from '../../src/errors-wire.js';
import { createPool, withTx } from '../../src/store/db.js';
import { outsideWaitBudget, runWithWaitBudget, WaitBudget } from '../../src/wait-budget.js';
import { testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

let pool: pg.Pool;

beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 1, queryTimeoutMs: 5_000, requestBudget: true });
});
afterAll(async () => {
  await pool?.end();
});

const sleepSql = (s: number) => `SELECT pg_sleep(${s})`;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; err: unknown }> {
  const began = performance.now();
  const err = await fn().then(
    () => null,
    (e: unknown) => e,
  );
  return { ms: performance.now() - began, err };
}

describe('a request pool under a wait budget', () => {
  it('statements in a row share the budget: the one past it is cut as 503 unavailable', async () => {
    await pool.query('SELECT 1'); // a connection ready, so only statements are timed
    const budget = new WaitBudget(1_000);
    const r = await timed(() =>
      runWithWaitBudget(budget, async () => {
        await pool.query(sleepSql(0.4));
        await pool.query(sleepSql(0.4));
        await pool.query(sleepSql(0.4)); // each far below the pool's 5 s; the third ends past 1 s
      }),
    );
    expect(toAppError(r.err).code).toBe('unavailable');
    expect(r.ms).toBeGreaterThan(950);
    expect(r.ms).toBeLessThan(1_900);
    expect(budget.leftMs()).toBe(0);
    // Spent: the next statement of the request is refused at once.
    const next = await timed(() => runWithWaitBudget(budget, () => pool.query('SELECT 1')));
    expect(toAppError(next.err)).toMatchObject({ code: 'unavailable', retryAfterS: 1 });
    expect(next.ms).toBeLessThan(200);
  });

  it('a transaction (withTx) spends the same budget, and its connection is not reused broken', async () => {
    const r = await timed(() =>
      runWithWaitBudget(new WaitBudget(600), () =>
        withTx(pool, async (tx) => {
          await tx.query(sleepSql(0.4));
          await tx.query(sleepSql(0.4));
        }),
      ),
    );
    expect(toAppError(r.err).code).toBe('unavailable');
    expect(r.ms).toBeLessThan(1_500);
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]!.one).toBe(1);
  });

  it('waiting for a connection is cut by the budget', async () => {
    // The pool's one connection is held by work outside any request.
    const holding = outsideWaitBudget(() => pool.query(sleepSql(1.5)));
    await until('the one connection taken', () => pool.totalCount === 1 && pool.idleCount === 0);
    const r = await timed(() => runWithWaitBudget(new WaitBudget(400), () => pool.query('SELECT 1')));
    expect(toAppError(r.err).code).toBe('unavailable');
    expect(r.ms).toBeLessThan(1_000);
    await holding;
    // The connection the cut request was still queued for went back to the pool.
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]!.one).toBe(1);
  });

  it('outside a request, and once its request ended, only the pool bounds a wait', async () => {
    const outside = await timed(async () => {
      await pool.query(sleepSql(0.4));
      await pool.query(sleepSql(0.4));
    });
    expect(outside.err).toBeNull();
    const ended = new WaitBudget(100);
    ended.close();
    const after = await timed(() => runWithWaitBudget(ended, () => pool.query(sleepSql(0.3))));
    expect(after.err).toBeNull();
  });
});
