/**
 * Runs the durable side effects of ingested events (INTERFACE §9.4; store/effects.ts) on
 * the node that owns their shard, apart from the ingest path: a failing PR summary never
 * holds back or dead-letters an event. Each effect is claimed (a lapsing claim, so two
 * owners during a lease overlap never run it twice at once and a dead runner's claim
 * passes), run through its connector's `runEffect`, and settled: done, retried with capped
 * exponential backoff (first retry within 10 s, at most 5 minutes apart), or failed for
 * good once it is 24 hours old. Every failed attempt is counted and kept as the effect's
 * `last_error`, which the install's record shows.
 */
import type pg from 'pg';
import type { DriverRegistry } from '../connectors/driver.js';
import { AppError, isRetryable } from '../errors.js';
import type { Logger } from '../log.js';
import { claimDueEffects, completeEffect, failEffect, releaseEffect, type ClaimedEffect } from '../store/effects.js';
import { getInstallById } from '../store/installs.js';
import { toIso } from '../store/db.js';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/ports.js';
import { effectParent } from '../telemetry/effect-trace.js';
import { failActiveSpan, inSpan, tracingOn } from '../telemetry/tracing.js';
import { DEFAULT_EFFECT_TIMINGS, effectRetryPlan, type EffectTimings } from './effect-retry.js';

export interface EffectRunnerOptions {
  pool: pg.Pool;
  drivers: DriverRegistry;
  log: Logger;
  /** SERVICE_NAMESPACE: only this deployment's effects. */
  namespace: string;
  timings?: Partial<EffectTimings>;
  /** Effects running at once on this node. */
  concurrency?: number;
  onOutcome?(connector: string, kind: string, outcome: 'done' | 'failed' | 'given_up'): void;
  /** Times retries and the give-up age; the system clock unless a test drives it. */
  clock?: Clock;
}

export class EffectRunner {
  private readonly t: EffectTimings;
  private readonly log: Logger;
  private readonly running = new Map<string, AbortController>();
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** Shards this node owns right now; set by `start`, so nothing runs before the node owns shards. */
  private ownedShards: (() => number[]) | null = null;

  constructor(private readonly o: EffectRunnerOptions) {
    this.t = { ...DEFAULT_EFFECT_TIMINGS, ...o.timings };
    this.log = o.log.child({ component: 'effects' });
  }

  start(ownedShards: () => number[]): void {
    this.ownedShards = ownedShards;
    this.timer = setInterval(() => this.wake(), this.t.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Look for due effects now (after a commit that stored some). */
  wake(): void {
    if (this.stopped || this.ownedShards === null) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    this.pass = this.claimAndStart()
      .catch((err: unknown) => this.log.warn({ err }, 'effects not claimed; retrying on the next poll'))
      .finally(() => {
        this.pass = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.pass;
    for (const c of this.running.values()) c.abort(new Error('node stopping'));
    const deadline = Date.now() + 5_000;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  private async claimAndStart(): Promise<void> {
    const free = (this.o.concurrency ?? 8) - this.running.size;
    if (free <= 0) return;
    const claimMs = this.t.attemptTimeoutMs + 30_000;
    const owned = this.ownedShards?.() ?? [];
    const claimed = await claimDueEffects(this.o.pool, this.o.namespace, owned, free, claimMs);
    for (const e of claimed) {
      const c = new AbortController();
      this.running.set(e.id, c);
      void this.run(e, c).finally(() => {
        this.running.delete(e.id);
        this.wake();
      });
    }
  }

  private run(e: ClaimedEffect, c: AbortController): Promise<void> {
    if (!tracingOn()) return this.attempt(e, c);
    // INTERFACE §10.7: in its event's trace, so its upstream calls are there too.
    const attributes = {
      'effect.kind': e.kind,
      'effect.attempt': e.attempts,
      'install.id': e.install_id,
      'tenant.id': e.tenant_id,
      'connector.id': e.connector_id,
      'event.id': e.event_id,
    };
    return inSpan('effect.run', { parent: effectParent(e.install_id, e.event_id), attributes }, () =>
      this.attempt(e, c),
    );
  }

  private async attempt(e: ClaimedEffect, c: AbortController): Promise<void> {
    const log = this.log.child({ effect: e.id, kind: e.kind, installId: e.install_id, eventId: e.event_id });
    const timer = setTimeout(() => c.abort(new Error('effect attempt timed out')), this.t.attemptTimeoutMs);
    try {
      const install = await getInstallById(this.o.pool, e.install_id);
      const driver = install ? this.o.drivers.get(install.connector_id) : undefined;
      // An install or event that is gone, or a connector that is off, leaves nothing to do.
      if (install && driver?.runEffect && e.event_kind !== null) {
        const event = {
          installId: e.install_id,
          tenantId: e.tenant_id,
          connectorId: e.connector_id,
          id: e.event_id,
          kind: e.event_kind,
          occurredAt: e.occurred_at === null ? null : toIso(e.occurred_at),
          payload: e.payload,
        };
        await driver.runEffect(
          { install, signal: c.signal, log },
          { kind: e.kind, event, firstAttempt: e.attempts <= 1 },
        );
      }
      await completeEffect(this.o.pool, e.id);
      this.o.onOutcome?.(e.connector_id, e.kind, 'done');
    } catch (err) {
      failActiveSpan(err);
      if (this.stopped && c.signal.aborted) {
        await releaseEffect(this.o.pool, e.id).catch(() => undefined);
        return;
      }
      const { giveUp, retryInMs } = effectRetryPlan(
        {
          attempts: e.attempts,
          createdAtMs: e.created_at.getTime(),
          retryAfterS: err instanceof AppError ? err.retryAfterS : undefined,
          retryable: isRetryable(err),
        },
        (this.o.clock ?? systemClock).now(),
        this.t,
      );
      const message = describe(err);
      this.o.onOutcome?.(e.connector_id, e.kind, 'failed');
      if (giveUp) this.o.onOutcome?.(e.connector_id, e.kind, 'given_up');
      const why = isRetryable(err) ? 'side effect failed for 24 hours; given up' : 'side effect cannot succeed; failed';
      log[giveUp ? 'error' : 'warn'](
        { error: message, attempts: e.attempts, retryInMs: giveUp ? null : retryInMs },
        giveUp ? why : 'side effect failed; retrying later',
      );
      await failEffect(this.o.pool, e.id, message, { retryInMs, giveUp }).catch((err2: unknown) =>
        // The claim lapses and the effect runs again: nothing is lost.
        log.warn({ err: err2 }, 'effect outcome not stored; it runs again when its claim lapses'),
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

function describe(err: unknown): string {
  if (err instanceof AppError) return `${err.code}: ${err.message}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
