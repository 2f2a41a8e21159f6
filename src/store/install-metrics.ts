/**
 * Backfill and chat catch-up progress as metrics: installs by connector and backfill state (`pending`,
 * `running`, `complete`, `failed`), read from Postgres at scrape time (one grouped query),
 * so every node reports the same cluster-wide figure.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Queryable } from './db.js';

export function registerInstallMetrics(registry: Registry, db: Queryable): void {
  new Gauge({
    name: 'connector_service_backfills',
    help: 'Active installs by connector and backfill state',
    labelNames: ['connector', 'state'],
    registers: [registry],
    async collect() {
      const { rows } = await db
        .query<{ connector_id: string; backfill_state: string; n: string }>(
          `SELECT connector_id, backfill_state, count(*) AS n FROM installs
           WHERE status = 'active' GROUP BY connector_id, backfill_state`,
        )
        .catch(() => ({ rows: [] }));
      this.reset();
      for (const r of rows) this.set({ connector: r.connector_id, state: r.backfill_state }, Number(r.n));
    },
  });
  // INTERFACE §10.6: chat installs by catch-up state (`none` until their first gap).
  new Gauge({
    name: 'connector_service_chat_catch_ups',
    help: 'Active chat installs by catch-up state (none, pending, running, complete, failed)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const { rows } = await db
        .query<{ catch_up_state: string; n: string }>(
          `SELECT catch_up_state, count(*) AS n FROM installs
           WHERE status = 'active' AND connector_id = 'chatapp' GROUP BY catch_up_state`,
        )
        .catch(() => ({ rows: [] }));
      this.reset();
      for (const r of rows) this.set({ state: r.catch_up_state }, Number(r.n));
    },
  });
}
