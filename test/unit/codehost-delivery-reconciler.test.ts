/**
 * Unit: the delivery reconciliation runner (actors/codehost/delivery-reconciler.ts) after a
 * failed pass: the next try on backoff.ts's policy (never later than the period), the
 * period again for a failure that retrying cannot fix, and the count reset by a pass.
 */
import { describe, expect, it } from 'vitest';
import type { ReconcileOutcome } from '../../src/connectors/codehost/reconcile-deliveries.js';
import { codehostReconcilerActor } from '../../src/actors/codehost/delivery-reconciler.js';
import { codehostReconcileKey } from '../../src/actors/codehost/delivery-reconciler-protocol.js';
import { Unauthorized, UpstreamError } from '../../src/errors.js';
import type { KvPort } from '../../src/runtime/ports.js';
import { hydrateRecording } from '../support/actor-unit.js';

const kv: KvPort = {
  get: async () => null,
  create: async () => 1,
  update: async () => 1,
  put: async () => 1,
  delete: async () => undefined,
};
const passed: ReconcileOutcome = {
  checkpoint: null,
  examined: 0,
  foundFailed: 0,
  redelivered: 0,
  requestErrors: 0,
  givenUp: [],
};

async function runner(periodMs: number, results: Array<Error | null>) {
  const def = codehostReconcilerActor({
    periodMs,
    kv,
    actors: { ask: async () => ({}) } as never,
    pass: async () => {
      const r = results.shift();
      if (r) throw r;
      return passed;
    },
    random: () => 0.999_999,
  });
  const { ticker, ctx } = await hydrateRecording(def, codehostReconcileKey(1));
  const tick = () => def.handlers.tick(ctx, { type: 'tick' });
  return { ticker, tick };
}

describe('delivery reconciler', () => {
  it('retries a failed pass on the backoff, capped by the period, and a pass resets it', async () => {
    const down = () => new UpstreamError('GitHub answered 502', { details: { upstream_status: 502 } });
    const r = await runner(100_000, [down(), down(), down(), null, down()]);
    for (let i = 0; i < 5; i++) await r.tick();
    // Ceilings 30 s, 60 s, then the period (100 s, under the 120 s ceiling); after the pass, 30 s again.
    expect(r.ticker.armed).toEqual([29_999, 59_999, 100_000, 100_000, 29_999]);
  });

  it('waits for the next pass after a failure that retrying cannot fix', async () => {
    const refused = new UpstreamError('GitHub answered 401', { details: { upstream_status: 401 } });
    const r = await runner(300_000, [refused, new Unauthorized()]);
    expect(await r.tick()).toEqual({ ok: false });
    expect(await r.tick()).toEqual({ ok: false });
    expect(r.ticker.armed).toEqual([300_000, 300_000]);
  });
});
