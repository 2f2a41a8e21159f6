/**
 * An install's upstream secrets (bot token, refresh token...), stored only as ciphertext
 * (ARCHITECTURE "Storage"). The JSON of the secret object is what gets encrypted.
 */
import { NotFound } from '../errors.js';
import type { CredentialBinding, CredentialCipher } from './credential-cipher.js';
import { isUuid, type Queryable } from './db.js';

export interface PutCredentials extends CredentialBinding {
  secret: Record<string, unknown>;
}

/**
 * Encrypts and upserts; a later put replaces the row and clears a revocation.
 * NotFound when the install does not exist in that tenant: a credential row can only be
 * written for an install of its own tenant.
 */
export async function putCredentials(q: Queryable, cipher: CredentialCipher, input: PutCredentials): Promise<void> {
  const binding = { tenantId: input.tenantId, installId: input.installId };
  if (!isUuid(binding.tenantId) || !isUuid(binding.installId)) throw new NotFound('install not found');
  const sealed = cipher.encrypt(JSON.stringify(input.secret), binding);
  const { rowCount } = await q.query(
    `INSERT INTO credentials (install_id, tenant_id, key_version, nonce, ciphertext, tag)
     SELECT install_id, tenant_id, $3, $4, $5, $6 FROM installs WHERE install_id = $1 AND tenant_id = $2
     ON CONFLICT (install_id) DO UPDATE
       SET key_version = EXCLUDED.key_version, nonce = EXCLUDED.nonce, ciphertext = EXCLUDED.ciphertext,
           tag = EXCLUDED.tag, revoked_at = NULL, updated_at = now()`,
    [binding.installId, binding.tenantId, sealed.keyVersion, sealed.nonce, sealed.ciphertext, sealed.tag],
  );
  if (!rowCount) throw new NotFound('install not found');
}

interface CredentialRow {
  key_version: number;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/**
 * The decrypted secret, or null when absent or revoked. A row that fails to decrypt
 * (altered, moved to another install or tenant, unknown key version) throws Internal
 * `credentials_unreadable`: that is an operator problem, never an absence.
 */
export async function getCredentials(
  q: Queryable,
  cipher: CredentialCipher,
  binding: CredentialBinding,
): Promise<Record<string, unknown> | null> {
  if (!isUuid(binding.tenantId) || !isUuid(binding.installId)) return null;
  const { rows } = await q.query<CredentialRow>(
    `SELECT key_version, nonce, ciphertext, tag FROM credentials
     WHERE install_id = $1 AND tenant_id = $2 AND revoked_at IS NULL`,
    [binding.installId, binding.tenantId],
  );
  const row = rows[0];
  if (!row) return null;
  const plaintext = cipher.decrypt(
    { keyVersion: row.key_version, nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag },
    binding,
  );
  return JSON.parse(plaintext.toString('utf8')) as Record<string, unknown>;
}

/**
 * Marks the credentials revoked and wipes the ciphertext: a revoked secret has no reason
 * to stay in the database. Returns whether a live row was revoked (idempotent).
 */
export async function revokeCredentials(q: Queryable, installId: string): Promise<boolean> {
  if (!isUuid(installId)) return false;
  const { rowCount } = await q.query(
    `UPDATE credentials
     SET revoked_at = now(), updated_at = now(), nonce = '\\x', ciphertext = '\\x', tag = '\\x'
     WHERE install_id = $1 AND revoked_at IS NULL`,
    [installId],
  );
  return (rowCount ?? 0) > 0;
}
