/**
 * `keys rotate` covers webhook secrets (INTERFACE §9.1, §10.2): a secret and a previous one
 * sealed under K1 are re-sealed under K2, so they open once K1 is dropped; a webhook already
 * under K2 is left alone.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { createTenant } from '../../src/store/tenants.js';
import { createWebhook, openSecret, rotateWebhookSecrets, sealSecret } from '../../src/store/webhooks.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

const K1 = TEST_MASTER_KEY;
const K2 = 'a-second-master-key-0123456789abcdef-0123456789';
let pool: ReturnType<typeof createPool>;

beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 2 });
});
afterAll(async () => {
  await pool?.end();
});

describe('keys rotate and webhook secrets', () => {
  it('re-seals secrets under the current key; they open without the previous one', async () => {
    const tenant = await createTenant(pool, K1, 'webhook-rotate');
    const old = CredentialCipher.fromMasterKey(K1);
    const id = randomUUID();
    await createWebhook(pool, {
      id,
      tenantId: tenant.tenant_id,
      url: 'https://example.com/hooks',
      kinds: [],
      description: null,
      secret: sealSecret(old, tenant.tenant_id, id, 'whsec_current'),
    });
    await pool.query('UPDATE webhooks SET previous_secret = $2 WHERE webhook_id = $1', [
      id,
      sealSecret(old, tenant.tenant_id, id, 'whsec_previous'),
    ]);
    const both = CredentialCipher.fromMasterKeys({ current: K2, previous: [K1] });
    expect(await rotateWebhookSecrets(pool, both)).toBeGreaterThanOrEqual(1);
    expect(await rotateWebhookSecrets(pool, both)).toBe(0);

    const onlyNew = CredentialCipher.fromMasterKey(K2);
    const { rows } = await pool.query<{ secret: Buffer; previous_secret: Buffer }>(
      'SELECT secret, previous_secret FROM webhooks WHERE webhook_id = $1',
      [id],
    );
    expect(openSecret(onlyNew, tenant.tenant_id, id, rows[0]!.secret)).toBe('whsec_current');
    expect(openSecret(onlyNew, tenant.tenant_id, id, rows[0]!.previous_secret)).toBe('whsec_previous');
  });
});
