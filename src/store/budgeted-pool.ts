/**
 * A pool whose waits spend the running request's budget (INTERFACE §9.3, src/wait-budget.ts):
 * waiting for a connection and each statement are bounded by what the request has left and
 * count what they took, so a request's Postgres waits add up to 2 s at most, however many
 * statements it runs. Outside a request (no budget) the pool behaves as configured.
 *
 * A statement cut by the budget fails as node-postgres's own `query_timeout` does ("Query
 * read timeout"): its connection is dropped, not reused (db.ts rollbackOrDrop). A connection
 * that arrives after its request gave up goes back to the pool.
 */
import type pg from 'pg';
import { budgetSpent, currentWaitBudget, type WaitBudget } from '../wait-budget.js';

type Callback = (err: Error | undefined, res?: unknown) => void;
type Connect = () => Promise<pg.PoolClient>;

/** Makes `pool`'s connections and statements spend the running request's budget. */
export function spendRequestBudget(pool: pg.Pool, queryTimeoutMs: number): void {
  const connect = pool.connect.bind(pool) as Connect;
  // pg-pool's own `query` checks out through `this.connect(callback)`, so both forms are kept.
  const budgeted = (cb?: (err: Error | undefined, client?: pg.PoolClient, done?: () => void) => void) => {
    const budget = currentWaitBudget();
    const got = budget ? connectWithin(connect, budget) : connect();
    if (!cb) return got;
    got.then(
      (client) => cb(undefined, client, () => client.release()),
      (err: Error) => cb(err),
    );
    return undefined;
  };
  pool.connect = budgeted as unknown as pg.Pool['connect'];
  pool.on('connect', (client) => boundStatements(client, queryTimeoutMs));
}

async function connectWithin(connect: Connect, budget: WaitBudget): Promise<pg.PoolClient> {
  const left = budget.leftMs();
  if (left <= 0) throw budgetSpent('Postgres', budget);
  const began = performance.now();
  const got = connect();
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  try {
    return await Promise.race([
      got,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(budgetSpent('Postgres (a connection)', budget));
        }, left);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    budget.spend(performance.now() - began);
    if (late)
      got.then(
        (client) => client.release(),
        () => undefined,
      );
  }
}

/**
 * Each statement of `client` made inside a request gets `query_timeout` = what the request
 * has left (at most the pool's own) and spends what it took. Cursors (`submit`) pass as they are.
 */
function boundStatements(client: pg.PoolClient, queryTimeoutMs: number): void {
  const query = client.query as (...args: unknown[]) => unknown;
  client.query = function (this: pg.PoolClient, config: unknown, values?: unknown, cb?: unknown) {
    const budget = currentWaitBudget();
    const submittable = typeof (config as { submit?: unknown } | null)?.submit === 'function';
    if (!budget || submittable) return query.apply(this, [config, values, cb].slice(0, arguments.length));
    let callback = cb as Callback | undefined;
    let vals = values;
    if (typeof values === 'function') {
      callback = values as Callback;
      vals = undefined;
    }
    const left = budget.leftMs();
    if (left <= 0) {
      const err = budgetSpent('Postgres', budget);
      if (callback) return void process.nextTick(callback, err);
      return Promise.reject(err);
    }
    const own = typeof config === 'string' ? { text: config } : { ...(config as pg.QueryConfig) };
    const timeout = Math.max(1, Math.min((own as { query_timeout?: number }).query_timeout ?? queryTimeoutMs, left));
    const cfg = { ...own, query_timeout: Math.ceil(timeout) };
    const began = performance.now();
    const spent = () => budget.spend(performance.now() - began);
    if (callback) {
      const done = callback;
      return query.call(this, cfg, vals, (err: Error | undefined, res: unknown) => {
        spent();
        done(err, res);
      });
    }
    return (query.call(this, cfg, vals) as Promise<unknown>).then(
      (res) => {
        spent();
        return res;
      },
      (err: unknown) => {
        spent();
        throw err;
      },
    );
  } as pg.PoolClient['query'];
}
