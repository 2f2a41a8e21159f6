/**
 * The housekeeping actor, key `housekeeping/retention` (INTERFACE §10.5, ARCHITECTURE "Data
 * lifecycle"): the one place that deletes what is past its retention, in every table.
 * Exactly one node runs it: the actor lives on the shard its key hashes to, so the shard
 * lease is its lease (taken over when its node dies), as the GitHub reconciler's is. Every
 * period its ticker asks the key for a `tick` through the router, so after a shard move the
 * tick reaches the new owner; the module resumes it when a node acquires that shard.
 *
 * A pass (src/graph/housekeeping-pass.ts) works in bounded batches; a pass that fails (Postgres away)
 * is tried again at the next period.
 */
import type { ActorDefinition } from '../runtime/actor-definition.js';
import type { ActorAsk, Clock, KeyOf } from '../runtime/ports.js';
import { systemClock } from '../runtime/clock.js';
import { createTicker, type Ticker } from '../runtime/ticker.js';
import { HOUSEKEEPING_KIND, type HousekeepingProtocol, type PassOutcome } from './housekeeping-protocol.js';

export interface HousekeepingPorts {
  /** Between passes. */
  periodMs: number;
  /** The first pass of an activation, this long after it (a node's start stays light). */
  firstDelayMs: number;
  actors: ActorAsk;
  pass(signal: AbortSignal): Promise<PassOutcome>;
  onPass?(deleted: PassOutcome): Promise<void> | void;
  clock?: Clock;
}

interface State {
  ticker: Ticker;
}

/** A pass works off at most its share of batches; at 1 000 rows a batch that is minutes at most. */
const HOUSEKEEPING_TICK_TIMEOUT_MS = 15 * 60_000;

export function housekeepingActor(ports: HousekeepingPorts): ActorDefinition<State, HousekeepingProtocol> {
  return {
    kind: HOUSEKEEPING_KIND,
    // Ticks keep it active; it only goes away with its shard.
    idleMs: ports.periodMs * 2 + HOUSEKEEPING_TICK_TIMEOUT_MS,
    mailboxCapacity: 4,
    async hydrate(key) {
      const ticker = createTicker({
        fire: () =>
          ports.actors.ask(
            key as KeyOf<HousekeepingProtocol>,
            { type: 'tick' },
            {
              timeoutMs: HOUSEKEEPING_TICK_TIMEOUT_MS,
            },
          ),
        onError: () => undefined, // the pass logs its own failure; a lost tick is re-armed on resume
        maxDelayMs: ports.periodMs,
        clock: ports.clock ?? systemClock,
      });
      return { ticker };
    },
    handlers: {
      async resume(ctx) {
        if (ctx.state.ticker.dueAt === null) ctx.state.ticker.arm(ports.firstDelayMs);
        return { ok: true as const };
      },
      async tick(ctx) {
        try {
          const deleted = await ports.pass(ctx.signal);
          await ports.onPass?.(deleted);
          if (Object.keys(deleted).length > 0) ctx.log.info({ deleted }, 'housekeeping deleted rows past retention');
          return { ok: true, deleted };
        } catch (err) {
          ctx.log.warn({ err }, 'housekeeping pass failed; trying again at the next period');
          return { ok: false };
        } finally {
          ctx.state.ticker.arm(ports.periodMs);
        }
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
    },
  };
}
