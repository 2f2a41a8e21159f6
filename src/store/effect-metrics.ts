/**
 * The queue of durable side effects as metrics (INTERFACE §9.4, issue 15 item 7): effects
 * still to run by connector, kind and whether they failed before (`pending`: never tried
 * or tried without error yet; `retrying`: waiting for a retry after a failure), and the
 * age of the oldest one per connector. Failed-for-good and done effects are counters in
 * runtime/metrics.ts.
 *
 * Cost is bounded twice: the aggregate runs at most once per `REFRESH_MS` whatever the
 * scrape rate (a scrape in between reads the last figures), and each run has a statement
 * timeout of `QUERY_TIMEOUT_MS` on the server (SET LOCAL), so a huge backlog costs at most
 * that much Postgres time per refresh. It reads only `state = 'pending'` rows of this
 * deployment's namespace (the partial index `effects_due`), cluster-wide, so every node
 * reports the same figure.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Pool } from 'pg';
import type { Logger } from '../log.js';
import { withTx } from './db.js';

const REFRESH_MS = 15_000;
const QUERY_TIMEOUT_MS = 1_000;

interface QueueRow {
  connector_id: string;
  kind: string;
  state: 'pending' | 'retrying';
  n: string;
  oldest_s: number;
}

/** One grouped read of the queued effects of `namespace`, bounded by a server-side timeout. */
export async function readEffectQueue(pool: Pool, namespace: string): Promise<QueueRow[]> {
  return withTx(
    pool,
    async (c) => {
      await c.query(`SET LOCAL statement_timeout = ${QUERY_TIMEOUT_MS}`);
      const { rows } = await c.query<QueueRow>(
        `SELECT connector_id, kind,
                CASE WHEN last_error IS NULL THEN 'pending' ELSE 'retrying' END AS state,
                count(*) AS n, extract(epoch FROM now() - min(created_at))::float8 AS oldest_s
         FROM effects WHERE state = 'pending' AND namespace = $1
         GROUP BY 1, 2, 3`,
        [namespace],
      );
      return rows;
    },
    { maxAttempts: 1 },
  );
}

export function registerEffectMetrics(registry: Registry, pool: Pool, namespace: string, log: Logger): void {
  let rows: QueueRow[] | null = [];
  let refreshedAt = 0;
  let inFlight: Promise<void> | null = null;
  const refresh = async () => {
    if (Date.now() - refreshedAt < REFRESH_MS) return;
    inFlight ??= readEffectQueue(pool, namespace)
      .then(
        (r) => void (rows = r),
        (err: unknown) => {
          // No figure rather than a stale one: absent() in an alert notices it.
          rows = null;
          log.warn({ err }, 'reading the effect queue for /metrics failed; tried again at the next scrape');
        },
      )
      .finally(() => {
        refreshedAt = Date.now();
        inFlight = null;
      });
    await inFlight;
  };

  new Gauge({
    name: 'connector_service_effects_queued',
    help:
      'Side effects of ingested events still to run, whole cluster, ' +
      'by connector, kind and state (pending|retrying)',
    labelNames: ['connector', 'kind', 'state'],
    registers: [registry],
    async collect() {
      await refresh();
      this.reset();
      for (const r of rows ?? []) this.inc({ connector: r.connector_id, kind: r.kind, state: r.state }, Number(r.n));
    },
  });
  new Gauge({
    name: 'connector_service_effects_oldest_queued_seconds',
    help: 'Age of the oldest side effect still to run, whole cluster, by connector',
    labelNames: ['connector'],
    registers: [registry],
    async collect() {
      await refresh();
      this.reset();
      const oldest = new Map<string, number>();
      for (const r of rows ?? []) oldest.set(r.connector_id, Math.max(oldest.get(r.connector_id) ?? 0, r.oldest_s));
      for (const [connector, s] of oldest) this.set({ connector }, s);
    },
  });
}
