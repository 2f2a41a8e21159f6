/**
 * Tenants and their API keys (INTERFACE §1 "tenants create": the key is shown once and
 * only a hash is stored).
 */
import { randomUUID } from 'node:crypto';
import { BadRequest } from '../errors.js';
import { API_SCOPES } from '../api-scopes.js';
import { findApiKey, SHA256_KEY_VERSION, type KeyGrant, type KeyRing } from './api-keys.js';
import { apiKeyDisplayPrefix, generateApiKey, hashApiKey } from './credential-cipher.js';
import type { Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface CreatedTenant {
  tenant_id: string;
  /** Names the key for `api-keys revoke` (INTERFACE §9.1). */
  key_id: string;
  /** The raw key: returned here once, never stored. */
  api_key: string;
}

// `_keys`: no master key enters the key's hash any more (api-keys.ts); kept so callers stay alike.
export async function createTenant(q: Queryable, _keys: KeyRing, name: string): Promise<CreatedTenant> {
  const clean = sanitizeText(name).trim();
  if (clean.length === 0 || clean.length > 200) throw new BadRequest('tenant name must be 1-200 characters');
  const apiKey = generateApiKey();
  // One statement, so a tenant never exists without its first key, which holds every scope
  // (§10.4), nor that key without its audit entry (§10.5: an operator's, no key id).
  const { rows } = await q.query<{ tenant_id: string; key_id: string }>(
    `WITH t AS (INSERT INTO tenants (name) VALUES ($1) RETURNING tenant_id),
     k AS (INSERT INTO api_keys (key_hash, tenant_id, key_prefix, key_version, scopes)
           SELECT $2, tenant_id, $3, $4, $5 FROM t
           RETURNING tenant_id, key_id),
     a AS (INSERT INTO audit_log (tenant_id, action, key_id, request_id, target, outcome)
           SELECT tenant_id, 'api_key_create', NULL, $6, 'api-key/' || key_id, 'ok' FROM k)
     SELECT tenant_id, key_id FROM k`,
    [clean, hashApiKey(apiKey), apiKeyDisplayPrefix(apiKey), SHA256_KEY_VERSION, API_SCOPES, `cli-${randomUUID()}`],
  );
  return { tenant_id: rows[0]!.tenant_id, key_id: rows[0]!.key_id, api_key: apiKey };
}

/** The grant of a Bearer key (its tenant, id, scopes, expiry), or null (unknown, revoked, expired or malformed key). */
export function findTenantByApiKey(q: Queryable, keys: KeyRing, rawKey: string): Promise<KeyGrant | null> {
  return findApiKey(q, keys, rawKey);
}
