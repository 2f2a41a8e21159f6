/**
 * Integration (INTERFACE §9.4): the effect runner decides by the one classifier of
 * outcomes (`isRetryable`, errors.ts). An effect whose upstream answers 422 fails at once,
 * with its cause on the install record, after one attempt; one whose upstream answers 503
 * stays pending for a retry. Real Postgres; the driver is a test driver whose effect throws
 * what a connector's classifier would.
 */
import type { Pool } from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorDriver } from '../../src/connectors/driver.js';
import { EffectRunner } from '../../src/effects/effect-runner.js';
import { UpstreamError } from '../../src/errors.js';
import { createPool } from '../../src/store/db.js';
import { insertEffects, summarizeEffects } from '../../src/store/effects.js';
import { insertEvent } from '../../src/store/events.js';
import { createInstall, setBackfill, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

let pool: Pool;
const namespace = `effects-${Math.random().toString(36).slice(2, 8)}`;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
});
afterAll(() => pool?.end());

async function installWithEffect(status: number): Promise<Install> {
  const tenantId = (await createTenant(pool, TEST_MASTER_KEY, 'effects')).tenant_id;
  const install = await createInstall(pool, {
    tenantId,
    connectorId: 'codehost',
    externalId: `x-${status}-${namespace}`,
  });
  await setBackfill(pool, install.install_id, 'complete');
  const base = { installId: install.install_id, tenantId, connectorId: 'codehost' };
  const row = { install_id: install.install_id, tenant_id: tenantId, connector_id: 'codehost' };
  await insertEvent(pool, { ...row, id: `ev-${status}`, kind: 'pull_request', payload: { status } });
  await insertEffects(pool, [{ ...base, namespace, shard: 0, eventId: `ev-${status}`, kind: 'test', serialKey: 's' }]);
  return install;
}

describe('the effect runner and the outcome classifier', () => {
  it('fails a 422 at once with its cause and retries a 503', async () => {
    const calls = new Map<number, number>();
    const driver = {
      id: 'codehost',
      runEffect: async (_ctx: unknown, e: { event: { payload: unknown } }) => {
        const status = (e.event.payload as { status: number }).status;
        calls.set(status, (calls.get(status) ?? 0) + 1);
        throw new UpstreamError(`GitHub answered ${status}`, { details: { upstream_status: status } });
      },
    } as unknown as ConnectorDriver;
    const refused = await installWithEffect(422);
    const unavailable = await installWithEffect(503);
    const runner = new EffectRunner({
      pool,
      drivers: new Map([['codehost', driver]]),
      log: pino({ level: 'silent' }),
      namespace,
      timings: { retryBaseMs: 60_000, pollMs: 50 },
    });
    runner.start(() => [0]);
    try {
      const failed = await until('the 422 effect failed', async () => {
        const s = await summarizeEffects(pool, refused.install_id);
        return s.failed === 1 ? s : null;
      });
      expect(failed.pending).toBe(0);
      expect(failed.last_error).toContain('422');
      const retrying = await until('the 503 effect waiting for its retry', async () => {
        const s = await summarizeEffects(pool, unavailable.install_id);
        return s.retrying === 1 ? s : null;
      });
      expect(retrying.failed).toBe(0);
      expect(retrying.last_error).toContain('503');
      expect(calls.get(422)).toBe(1);
    } finally {
      await runner.stop();
    }
  });
});
