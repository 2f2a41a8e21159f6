/**
 * Abuse limits (INTERFACE §9.2): the per-tenant request rate, the metrics port moving
 * /metrics off the public port, and the cap on unexpired OAuth states per tenant.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { chatOAuthRoutes } from '../../src/edge/routes/chatapp/oauth.js';
import { MAX_LIVE_STATES_PER_TENANT } from '../../src/store/chat-oauth-states.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { edgeFixture } from '../support/edge.js';

describe('per-tenant rate limit (SERVICE_TENANT_RATE_PER_S)', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  beforeAll(async () => {
    f = await edgeFixture(undefined, undefined, { SERVICE_TENANT_RATE_PER_S: '1', SERVICE_METRICS_PORT: '9' });
  });
  afterAll(() => f.close());

  it('answers 429 with Retry-After past the burst, and another tenant is not affected', async () => {
    const [a, b] = [await f.tenant('noisy'), await f.tenant('quiet')];
    const get = (t: typeof a) => f.app.inject({ method: 'GET', url: '/api/v1/connectors', headers: t.auth });
    const codes: number[] = [];
    let limited: Awaited<ReturnType<typeof get>> | null = null;
    for (let i = 0; i < 10; i++) {
      const res = await get(a);
      codes.push(res.statusCode);
      if (res.statusCode === 429) limited ??= res;
    }
    // Burst 2× the rate: the first two pass whatever the clock did.
    expect(codes.slice(0, 2)).toEqual([200, 200]);
    expect(limited, `codes ${codes.join(',')}`).not.toBeNull();
    expect(limited!.json().error.code).toBe('rate_limited');
    expect(Number(limited!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The noisy tenant spent its allowance, not the other tenant's.
    expect((await get(b)).statusCode).toBe(200);
    expect((await get(b)).statusCode).toBe(200);
    // Unauthenticated requests are refused as before (401), never counted as a tenant's.
    const anon = await f.app.inject({ method: 'GET', url: '/api/v1/connectors' });
    expect(anon.statusCode).toBe(401);
  });

  it('serves no /metrics on the public port when SERVICE_METRICS_PORT is set', async () => {
    const res = await f.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });
});

describe('OAuth state cap per tenant', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  const pool = createPool(testDatabaseUrl());
  beforeAll(async () => {
    const env = { SERVICE_MASTER_KEY: TEST_MASTER_KEY, CHATAPP_CLIENT_ID: 'cid', CHATAPP_CLIENT_SECRET: 'cs' };
    const plugin = chatOAuthRoutes({
      config: loadConfig(env),
      pool,
      cipher: CredentialCipher.fromMasterKey(TEST_MASTER_KEY),
      log: pino({ level: 'silent' }),
      startBackfill: async () => {},
    });
    f = await edgeFixture(undefined, [{ plugin }], { SERVICE_TENANT_RATE_PER_S: '100000' });
  });
  afterAll(async () => {
    await f.close();
    await pool.end();
  });

  it(`refuses a tenant's state past ${MAX_LIVE_STATES_PER_TENANT} unexpired ones; others still start`, async () => {
    const [a, b] = [await f.tenant('looping'), await f.tenant('other')];
    const start = (t: typeof a) =>
      f.app.inject({
        method: 'POST',
        url: '/api/v1/connectors/chatapp/oauth/start',
        headers: t.auth,
        payload: { redirect_uri: 'https://app.example/cb' },
      });
    for (let i = 0; i < MAX_LIVE_STATES_PER_TENANT; i++) expect((await start(a)).statusCode).toBe(200);
    const refused = await start(a);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('rate_limited');
    // Until the oldest state expires (10 minutes).
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(500);
    expect((await start(b)).statusCode).toBe(200);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM oauth_states WHERE tenant_id = $1', [
      a.tenant_id,
    ]);
    expect(rows[0].n).toBe(MAX_LIVE_STATES_PER_TENANT);
  });
});
