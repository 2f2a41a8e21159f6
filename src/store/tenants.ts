/**
 * Tenants and their API keys (INTERFACE §1 "tenants create": the key is shown once and
 * only a keyed hash is stored).
 */
import { BadRequest } from '../errors.js';
import { apiKeyDisplayPrefix, generateApiKey, hashApiKey } from './credential-cipher.js';
import type { Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface CreatedTenant {
  tenant_id: string;
  /** The raw key: returned here once, never stored. */
  api_key: string;
}

export async function createTenant(q: Queryable, masterKey: string, name: string): Promise<CreatedTenant> {
  const clean = sanitizeText(name).trim();
  if (clean.length === 0 || clean.length > 200) throw new BadRequest('tenant name must be 1-200 characters');
  const apiKey = generateApiKey();
  // One statement, so a tenant never exists without its first key.
  const { rows } = await q.query<{ tenant_id: string }>(
    `WITH t AS (INSERT INTO tenants (name) VALUES ($1) RETURNING tenant_id)
     INSERT INTO api_keys (key_hash, tenant_id, key_prefix)
     SELECT $2, tenant_id, $3 FROM t
     RETURNING tenant_id`,
    [clean, hashApiKey(masterKey, apiKey), apiKeyDisplayPrefix(apiKey)],
  );
  return { tenant_id: rows[0]!.tenant_id, api_key: apiKey };
}

/** The tenant a Bearer key belongs to, or null (unknown, revoked or malformed key). */
export async function findTenantByApiKey(
  q: Queryable,
  masterKey: string,
  rawKey: string,
): Promise<{ tenantId: string } | null> {
  // A header can be anything; do not hash megabytes for a lookup that cannot match.
  if (typeof rawKey !== 'string' || rawKey.length === 0 || rawKey.length > 256) return null;
  const { rows } = await q.query<{ tenant_id: string }>(
    'SELECT tenant_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashApiKey(masterKey, rawKey)],
  );
  return rows[0] ? { tenantId: rows[0].tenant_id } : null;
}
