/**
 * The housekeeping module (INTERFACE §10.5): the one lease-held actor that applies every
 * retention (src/actors/housekeeping.ts), resumed on the node that owns its shard, and its
 * metrics: rows deleted per table, and the age of the oldest row each retention keeps.
 */
import { Counter, Gauge } from 'prom-client';
import { housekeepingActor } from '../actors/housekeeping.js';
import { housekeepingKey } from '../actors/housekeeping-protocol.js';
import { pruneChanges } from '../graph/change-log.js';
import { housekeepingPass, oldestAges } from '../graph/housekeeping-pass.js';
import { pruneAudit } from '../store/audit-log.js';
import { pruneDeliveries } from '../store/webhook-deliveries.js';
import type { Clock } from '../runtime/ports.js';
import { systemClock } from '../runtime/clock.js';
import type { ServiceModuleFactory } from './module.js';

/** Between passes: often enough that a day's rows go in small batches, rare enough to cost nothing. */
const HOUSEKEEPING_PERIOD_MS = 10 * 60_000;
const FIRST_PASS_DELAY_MS = 60_000;
const DAY_MS = 86_400_000;

function housekeepingModuleWith(opts: { clock?: Clock; periodMs?: number; firstDelayMs?: number } = {}) {
  const factory: ServiceModuleFactory = (deps) => {
    const clock = opts.clock ?? systemClock;
    const deleted = deps.metrics
      ? new Counter({
          name: 'connector_service_retention_deleted_rows_total',
          help: 'Rows deleted by the housekeeping actor because they were past their retention, by table',
          labelNames: ['table'],
          registers: [deps.metrics],
        })
      : null;
    const oldest = deps.metrics
      ? new Gauge({
          name: 'connector_service_retention_oldest_row_seconds',
          help: 'Age of the oldest row a retention keeps, by table, as of the last housekeeping pass',
          labelNames: ['table'],
          registers: [deps.metrics],
        })
      : null;
    const actor = housekeepingActor({
      periodMs: opts.periodMs ?? HOUSEKEEPING_PERIOD_MS,
      firstDelayMs: opts.firstDelayMs ?? FIRST_PASS_DELAY_MS,
      actors: deps.actors,
      clock,
      pass: (signal) =>
        housekeepingPass({
          pool: deps.pool,
          policy: deps.config.retention,
          now: () => clock.now(),
          extra: [
            {
              table: 'audit_log',
              prune: (now, limit) =>
                pruneAudit(deps.pool, new Date(now.getTime() - deps.config.retention.eventsDays * DAY_MS), limit),
            },
            {
              table: 'graph_changes',
              prune: (now, limit) =>
                pruneChanges(
                  deps.pool,
                  new Date(now.getTime() - deps.config.follow.changesRetentionDays * DAY_MS),
                  limit,
                ),
            },
            {
              // A webhook's attempts are kept as long as the changes they carried.
              table: 'webhook_deliveries',
              prune: (now, limit) =>
                pruneDeliveries(
                  deps.pool,
                  new Date(now.getTime() - deps.config.follow.changesRetentionDays * DAY_MS),
                  limit,
                ),
            },
          ],
          signal,
        }),
      async onPass(rows) {
        for (const [table, n] of Object.entries(rows)) deleted?.inc({ table }, n);
        if (!oldest) return;
        oldest.reset();
        for (const [table, s] of Object.entries(await oldestAges(deps.pool, clock.now()))) oldest.set({ table }, s);
      },
    });
    return {
      id: 'housekeeping',
      actors: [actor],
      routes: null,
      async resumeShards(shards) {
        if (!shards.has(deps.shardOf(housekeepingKey))) return;
        await deps.actors.ask(housekeepingKey, { type: 'resume' }, { idempotent: true }).catch((err: unknown) => {
          deps.log.warn({ err }, 'housekeeping did not resume; the resume sweep retries within a minute');
        });
      },
    };
  };
  return factory;
}

export const housekeepingModule = housekeepingModuleWith();
