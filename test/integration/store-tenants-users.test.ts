import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { API_SCOPES } from '../../src/api-scopes.js';
import { createTenant, findTenantByApiKey } from '../../src/store/tenants.js';
import { createUser, userBelongsToTenant } from '../../src/store/users.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

let pool: Pool;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 3 });
});
afterAll(async () => {
  await pool.end();
});

describe('tenants', () => {
  it('creates a tenant whose key finds it; only the keyed hash is stored', async () => {
    const t = await createTenant(pool, TEST_MASTER_KEY, 'Acme');
    expect(t.api_key).toMatch(/^csk_/);
    expect(await findTenantByApiKey(pool, TEST_MASTER_KEY, t.api_key)).toEqual({
      tenantId: t.tenant_id,
      keyId: t.key_id,
      scopes: [...API_SCOPES],
      expiresAt: null,
    });

    const { rows } = await pool.query('SELECT key_hash, key_prefix FROM api_keys WHERE tenant_id = $1', [t.tenant_id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].key_hash).toEqual(hashApiKey(t.api_key));
    expect(rows[0].key_prefix).toBe(t.api_key.slice(0, 12));
    expect(rows[0].key_hash.toString('utf8')).not.toContain(t.api_key);
  });

  it('answers null for a wrong, empty, oversized or revoked key; the master key does not matter', async () => {
    const t = await createTenant(pool, TEST_MASTER_KEY, 'Beta');
    expect(await findTenantByApiKey(pool, TEST_MASTER_KEY, `${t.api_key}x`)).toBeNull();
    expect(await findTenantByApiKey(pool, TEST_MASTER_KEY, '')).toBeNull();
    expect(await findTenantByApiKey(pool, TEST_MASTER_KEY, 'x'.repeat(10_000))).toBeNull();
    expect(await findTenantByApiKey(pool, `${TEST_MASTER_KEY}-other`, t.api_key)).toMatchObject({
      tenantId: t.tenant_id,
    });
    await pool.query('UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1', [t.tenant_id]);
    expect(await findTenantByApiKey(pool, TEST_MASTER_KEY, t.api_key)).toBeNull();
  });

  it('refuses an empty name', async () => {
    await expect(createTenant(pool, TEST_MASTER_KEY, '  ')).rejects.toMatchObject({ code: 'bad_request' });
  });
});

describe('users', () => {
  it('creates a user of a tenant and checks membership', async () => {
    const a = await createTenant(pool, TEST_MASTER_KEY, 'A');
    const b = await createTenant(pool, TEST_MASTER_KEY, 'B');
    const { user_id } = await createUser(pool, a.tenant_id, 'dev@example.com');
    expect(user_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await userBelongsToTenant(pool, a.tenant_id, user_id)).toBe(true);
    expect(await userBelongsToTenant(pool, b.tenant_id, user_id)).toBe(false);
    expect(await userBelongsToTenant(pool, a.tenant_id, 'not-a-uuid')).toBe(false);
    expect(await userBelongsToTenant(pool, a.tenant_id, '00000000-0000-4000-8000-000000000000')).toBe(false);
  });

  it('refuses an unknown tenant, a malformed email and a duplicate email (any case)', async () => {
    await expect(createUser(pool, '00000000-0000-4000-8000-000000000000', 'x@example.com')).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(createUser(pool, 'nope', 'x@example.com')).rejects.toMatchObject({ code: 'not_found' });
    const t = await createTenant(pool, TEST_MASTER_KEY, 'C');
    await expect(createUser(pool, t.tenant_id, 'no-at-sign')).rejects.toMatchObject({ code: 'bad_request' });
    await expect(createUser(pool, t.tenant_id, 'a b@example.com')).rejects.toMatchObject({ code: 'bad_request' });
    await createUser(pool, t.tenant_id, 'Dup@Example.com');
    await expect(createUser(pool, t.tenant_id, 'dup@example.com')).rejects.toMatchObject({ code: 'user_exists' });
    // The same email in another tenant is another user.
    const other = await createTenant(pool, TEST_MASTER_KEY, 'D');
    await expect(createUser(pool, other.tenant_id, 'dup@example.com')).resolves.toHaveProperty('user_id');
  });
});
