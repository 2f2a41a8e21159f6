/**
 * The `github_general` rate gate of one GitHub installation, key
 * `codehost-rate/{github_installation_id}` (spec §3.2, §8). One activation in the whole
 * cluster, so every walker of that installation (one per tenant it is installed into)
 * shares one budget. The arithmetic is `rate-gate.ts`; this actor keeps its state in the
 * cursor KV bucket, so a pause for a secondary limit survives a crash or a shard move.
 *
 * `take` charges one page. It carries what the caller's previous call observed (rate
 * headers, or a secondary limit's retry-after), folded in before charging.
 */
import { z } from 'zod';
import type { KvPort } from '../../runtime/ports.js';
import { newGate, observe, pause, take, type RateGateState } from '../../connectors/codehost/backfill/rate-gate.js';
import type { ActorDefinition } from '../../runtime/actor-definition.js';
import { kvKey } from '../../runtime/kv-port.js';
import type { ActorKey } from '../../runtime/names.js';
import { CODEHOST_RATE_KIND, type RateReport, type CodehostRateProtocol } from './codehost-rate-protocol.js';

export interface CodehostRatePorts {
  /** The cursor bucket (no TTL): the gate state outlives any pause. */
  kv: KvPort;
  now?: () => number;
}

interface State {
  gate: RateGateState;
}

const stored = z.object({
  limit: z.number(),
  tokens: z.number(),
  refilledAtMs: z.number(),
  remaining: z.number().nullable(),
  resetAtMs: z.number().nullable(),
  pausedUntilMs: z.number(),
});

const report = z
  .object({
    observed: z.object({ limit: z.number(), remaining: z.number(), resetAtMs: z.number() }).nullish(),
    limitedForS: z.number().nullish(),
  })
  .partial();

const enc = new TextEncoder();
const dec = new TextDecoder();

export function codehostRateActor(ports: CodehostRatePorts): ActorDefinition<State, CodehostRateProtocol> {
  const now = ports.now ?? Date.now;
  const keyOf = (k: ActorKey) => kvKey([CODEHOST_RATE_KIND, k.id[0]!]);

  const fold = (s: State, r: RateReport | undefined) => {
    const parsed = report.safeParse(r ?? {});
    if (!parsed.success) return;
    if (parsed.data.observed) observe(s.gate, parsed.data.observed, now());
    if (parsed.data.limitedForS !== undefined) pause(s.gate, parsed.data.limitedForS ?? null, now());
  };

  return {
    kind: CODEHOST_RATE_KIND,
    idleMs: 10 * 60_000,
    async hydrate(key) {
      const e = await ports.kv.get(keyOf(key));
      if (e) {
        const parsed = stored.safeParse(JSON.parse(dec.decode(e.value)));
        if (parsed.success) return { gate: parsed.data };
      }
      return { gate: newGate(now()) };
    },
    handlers: {
      /** Charge one page (after folding in the previous call's report). */
      async take(ctx, msg) {
        fold(ctx.state, msg.report);
        const t = take(ctx.state.gate, now());
        await ports.kv.put(keyOf(ctx.key), enc.encode(JSON.stringify(ctx.state.gate)));
        return t;
      },
      /** Fold in a report without charging (a secondary limit hit: pause every walker of the installation now). */
      async report(ctx, msg) {
        fold(ctx.state, msg.report);
        await ports.kv.put(keyOf(ctx.key), enc.encode(JSON.stringify(ctx.state.gate)));
        return { pausedUntilMs: ctx.state.gate.pausedUntilMs };
      },
    },
  };
}
