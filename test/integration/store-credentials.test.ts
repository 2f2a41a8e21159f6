import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { getCredentials, putCredentials, revokeCredentials } from '../../src/store/credentials.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

let pool: Pool;
const cipher = CredentialCipher.fromMasterKey(TEST_MASTER_KEY);
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 3 });
});
afterAll(async () => {
  await pool.end();
});

async function install(tenantId?: string): Promise<Install> {
  const tid = tenantId ?? (await createTenant(pool, TEST_MASTER_KEY, 'T')).tenant_id;
  return createInstall(pool, { tenantId: tid, connectorId: 'chatapp', externalId: `T${Math.random()}` });
}
const binding = (i: Install) => ({ tenantId: i.tenant_id, installId: i.install_id });

/** Copies one install's credential row, bytes unchanged, onto another install. */
async function transplant(from: Install, to: Install): Promise<void> {
  await pool.query(
    `INSERT INTO credentials (install_id, tenant_id, key_version, nonce, ciphertext, tag)
     SELECT $2, $3, key_version, nonce, ciphertext, tag FROM credentials WHERE install_id = $1`,
    [from.install_id, to.install_id, to.tenant_id],
  );
}

describe('credentials', () => {
  it('puts, gets, replaces and revokes', async () => {
    const inst = await install();
    expect(await getCredentials(pool, cipher, binding(inst))).toBeNull();
    await putCredentials(pool, cipher, { ...binding(inst), secret: { bot_token: 'xoxb-1', scopes: ['a'] } });
    expect(await getCredentials(pool, cipher, binding(inst))).toEqual({ bot_token: 'xoxb-1', scopes: ['a'] });

    const { rows } = await pool.query('SELECT ciphertext FROM credentials WHERE install_id = $1', [inst.install_id]);
    expect(rows[0].ciphertext.toString('utf8')).not.toContain('xoxb');

    await putCredentials(pool, cipher, { ...binding(inst), secret: { bot_token: 'xoxb-2' } });
    expect(await getCredentials(pool, cipher, binding(inst))).toEqual({ bot_token: 'xoxb-2' });

    expect(await revokeCredentials(pool, inst.install_id)).toBe(true);
    expect(await revokeCredentials(pool, inst.install_id)).toBe(false);
    expect(await getCredentials(pool, cipher, binding(inst))).toBeNull();
    const wiped = await pool.query('SELECT length(ciphertext) AS n FROM credentials WHERE install_id = $1', [
      inst.install_id,
    ]);
    expect(wiped.rows[0].n).toBe(0);

    // A new put (reinstall with fresh tokens) clears the revocation.
    await putCredentials(pool, cipher, { ...binding(inst), secret: { bot_token: 'xoxb-3' } });
    expect(await getCredentials(pool, cipher, binding(inst))).toEqual({ bot_token: 'xoxb-3' });
  });

  it('answers null to another tenant, and refuses to write for an install of another tenant', async () => {
    const inst = await install();
    const other = await install();
    await putCredentials(pool, cipher, { ...binding(inst), secret: { t: 1 } });
    expect(await getCredentials(pool, cipher, { tenantId: other.tenant_id, installId: inst.install_id })).toBeNull();
    await expect(
      putCredentials(pool, cipher, { tenantId: other.tenant_id, installId: inst.install_id, secret: { t: 2 } }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a row copied to another install or another tenant fails to decrypt', async () => {
    const source = await install();
    await putCredentials(pool, cipher, { ...binding(source), secret: { bot_token: 'xoxb-secret' } });

    const sameTenant = await install(source.tenant_id);
    await transplant(source, sameTenant);
    await expect(getCredentials(pool, cipher, binding(sameTenant))).rejects.toMatchObject({
      code: 'credentials_unreadable',
    });

    const otherTenant = await install();
    await transplant(source, otherTenant);
    await expect(getCredentials(pool, cipher, binding(otherTenant))).rejects.toMatchObject({
      code: 'credentials_unreadable',
    });
  });

  it('fails to decrypt under another master key', async () => {
    const inst = await install();
    await putCredentials(pool, cipher, { ...binding(inst), secret: { t: 1 } });
    const wrong = CredentialCipher.fromMasterKey(`${TEST_MASTER_KEY}-wrong`);
    await expect(getCredentials(pool, wrong, binding(inst))).rejects.toMatchObject({ code: 'credentials_unreadable' });
  });
});
