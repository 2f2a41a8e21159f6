/**
 * GitHub delivery reconciliation runner, key `codehost-reconcile/{app_id}` (INTERFACE §9.4).
 * Exactly one node runs it: the actor lives on the shard its key hashes to, so the shard
 * lease is its lease (at most one activation in the cluster, taken over when its node
 * dies). Every period its ticker asks the key for a `tick` through the router, so after a
 * shard move the tick reaches the new owner; the module resumes it on shard acquisition.
 *
 * The checkpoint (newest delivery seen, time of the last pass) lives in the cursors KV
 * bucket, so a new owner neither repeats a pass early nor forgets how far the last one got.
 */
import { z } from 'zod';
import { backoffMs, type BackoffPolicy } from '../../backoff.js';
import { isRetryable } from '../../errors.js';
import type { ReconcileCheckpoint, ReconcileOutcome } from '../../connectors/codehost/reconcile-deliveries.js';
import type { ActorDefinition } from '../../runtime/actor-definition.js';
import { kvKey } from '../../runtime/kv-port.js';
import type { ActorAsk, KeyOf, KvPort } from '../../runtime/ports.js';
import { createTicker, type Ticker } from '../../runtime/ticker.js';
import { CODEHOST_RECONCILE_KIND, type CodehostReconcileProtocol } from './delivery-reconciler-protocol.js';

function reconcileCheckpointKey(appId: number | string): string {
  return kvKey([CODEHOST_RECONCILE_KIND, String(appId)]);
}

export interface ReconcilerPorts {
  periodMs: number;
  /** The cursors bucket (no expiry). */
  kv: KvPort;
  actors: ActorAsk;
  pass(checkpoint: ReconcileCheckpoint | null, signal: AbortSignal): Promise<ReconcileOutcome>;
  onOutcome?(o: ReconcileOutcome): void;
  now?: () => number;
  /** The backoff's draw in [0, 1) (tests fix it). */
  random?: () => number;
}

interface State {
  checkpoint: ReconcileCheckpoint | null;
  ranAtMs: number;
  /** Failed passes in a row, for the backoff. */
  failures: number;
  ticker: Ticker;
}

const Stored = z.object({
  newest_at: z.string().nullable(),
  newest_id: z.number().nullable(),
  ran_at_ms: z.number(),
});

/** A pass pages back to its checkpoint; at GitHub's pace that is seconds, even for a busy App. */
const RECONCILE_TICK_TIMEOUT_MS = 120_000;
/**
 * A failed pass (GitHub down, say) is tried again on this backoff, never later than the
 * period; one that cannot succeed by trying again (`isRetryable`: a 401 for the App, say)
 * waits for the next pass at the period instead.
 */
const PASS_RETRY: BackoffPolicy = { firstMs: 30_000, capMs: 5 * 60_000 };

const enc = new TextEncoder();
const dec = new TextDecoder();

export function codehostReconcilerActor(ports: ReconcilerPorts): ActorDefinition<State, CodehostReconcileProtocol> {
  const now = ports.now ?? Date.now;
  return {
    kind: CODEHOST_RECONCILE_KIND,
    // Ticks keep it active; it only goes away with its shard.
    idleMs: ports.periodMs * 2 + RECONCILE_TICK_TIMEOUT_MS,
    mailboxCapacity: 4,
    async hydrate(key) {
      const ticker = createTicker({
        fire: () =>
          ports.actors.ask(
            key as KeyOf<CodehostReconcileProtocol>,
            { type: 'tick' },
            { timeoutMs: RECONCILE_TICK_TIMEOUT_MS },
          ),
        onError: () => undefined, // the pass logs its own failure; a lost tick is re-armed on resume
        maxDelayMs: ports.periodMs,
      });
      const e = await ports.kv.get(reconcileCheckpointKey(key.id[0]!));
      // An unreadable checkpoint starts over from the first-pass lookback; claims stop repeats.
      const s = e ? readStored(e.value) : null;
      return {
        checkpoint: s?.newest_at && s.newest_id !== null ? { newestAt: s.newest_at, newestId: s.newest_id } : null,
        ranAtMs: s?.ran_at_ms ?? 0,
        failures: 0,
        ticker,
      };
    },
    handlers: {
      async resume(ctx) {
        if (ctx.state.ticker.dueAt === null) ctx.state.ticker.arm(ctx.state.ranAtMs + ports.periodMs - now());
        return { ok: true as const };
      },
      async tick(ctx) {
        const s = ctx.state;
        let outcome: ReconcileOutcome;
        try {
          outcome = await ports.pass(s.checkpoint, ctx.signal);
        } catch (err) {
          if (!isRetryable(err)) {
            s.failures = 0;
            ctx.log.warn({ err }, 'GitHub delivery reconciliation failed; not retried before the next pass');
            s.ticker.arm(ports.periodMs);
            return { ok: false };
          }
          const waitMs = Math.min(ports.periodMs, backoffMs(PASS_RETRY, ++s.failures, ports.random));
          ctx.log.warn({ err, failures: s.failures, waitMs }, 'GitHub delivery reconciliation failed; trying again');
          s.ticker.arm(waitMs);
          return { ok: false };
        }
        s.failures = 0;
        s.checkpoint = outcome.checkpoint;
        s.ranAtMs = now();
        const stored = {
          newest_at: s.checkpoint?.newestAt ?? null,
          newest_id: s.checkpoint?.newestId ?? null,
          ran_at_ms: s.ranAtMs,
        };
        await ports.kv
          .put(reconcileCheckpointKey(ctx.key.id[0]!), enc.encode(JSON.stringify(stored)))
          .catch((err: unknown) =>
            ctx.log.warn({ err }, 'reconciliation checkpoint not saved; the next pass looks again'),
          );
        ports.onOutcome?.(outcome);
        if (outcome.foundFailed > 0 || outcome.requestErrors > 0) {
          ctx.log.info(
            { ...outcome, givenUp: outcome.givenUp.length, checkpoint: undefined },
            'GitHub delivery reconciliation pass',
          );
        }
        if (outcome.givenUp.length > 0) {
          ctx.log.warn(
            { guids: outcome.givenUp.slice(0, 20), count: outcome.givenUp.length },
            'GitHub deliveries that failed after every redelivery we asked for; no longer asked for. ' +
              'Look for why this service answers them with an error (the delivery log on the App page shows it)',
          );
        }
        s.ticker.arm(ports.periodMs);
        return { ok: true, ...outcome };
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
    },
  };
}

function readStored(bytes: Uint8Array): z.infer<typeof Stored> | null {
  try {
    const parsed = Stored.safeParse(JSON.parse(dec.decode(bytes)));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
