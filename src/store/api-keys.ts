/**
 * API-key lifecycle (INTERFACE §9.1): another key for a tenant, revocation, and the Bearer
 * lookup that accepts hashes made under a previous master key and upgrades them on use
 * (INTERFACE §9.2). Only a keyed hash of a key is ever stored; the raw key is shown once.
 */
import { NotFound } from '../errors.js';
import {
  apiKeyDisplayPrefix,
  apiKeyHashers,
  generateApiKey,
  keyVersionOf,
  type MasterKeys,
} from './credential-cipher.js';
import { isUuid, type Queryable } from './db.js';

export interface CreatedApiKey {
  key_id: string;
  /** The raw key: returned here once, never stored. */
  api_key: string;
}

/** A single master key, or the deployment's keys during a rotation. */
export type KeyRing = string | MasterKeys;

export const keyRing = (k: KeyRing): MasterKeys => (typeof k === 'string' ? { current: k, previous: [] } : k);

/** Another key of an existing tenant; NotFound for an unknown tenant. */
export async function createApiKey(q: Queryable, keys: KeyRing, tenantId: string): Promise<CreatedApiKey> {
  if (!isUuid(tenantId)) throw new NotFound('tenant not found');
  const ring = keyRing(keys);
  const apiKey = generateApiKey();
  const { rows } = await q.query<{ key_id: string }>(
    `INSERT INTO api_keys (key_hash, tenant_id, key_prefix, key_version)
     SELECT $1, tenant_id, $3, $4 FROM tenants WHERE tenant_id = $2
     RETURNING key_id`,
    [apiKeyHashers(ring)[0]!(apiKey), tenantId, apiKeyDisplayPrefix(apiKey), keyVersionOf(ring.current)],
  );
  if (!rows[0]) throw new NotFound('tenant not found');
  return { key_id: rows[0].key_id, api_key: apiKey };
}

/**
 * Revokes one key of a tenant (idempotent: revoking a revoked key answers the same).
 * NotFound when the key is not that tenant's. Edges hear of it through `api_keys_changed`.
 */
export async function revokeApiKey(
  q: Queryable,
  tenantId: string,
  keyId: string,
): Promise<{ key_id: string; revoked: true }> {
  if (!isUuid(tenantId) || !isUuid(keyId)) throw new NotFound('API key not found');
  const { rows } = await q.query<{ key_id: string }>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
     WHERE key_id = $1 AND tenant_id = $2 RETURNING key_id`,
    [keyId, tenantId],
  );
  if (!rows[0]) throw new NotFound('API key not found for that tenant');
  return { key_id: rows[0].key_id, revoked: true };
}

/**
 * The tenant a Bearer key belongs to, or null (unknown, revoked or malformed key). A key
 * found under a previous master key is re-hashed under the current one at once, so it
 * keeps working after that previous key is removed (INTERFACE §9.2).
 */
export async function findApiKey(
  q: Queryable,
  keys: KeyRing,
  rawKey: string,
): Promise<{ tenantId: string; keyId: string } | null> {
  // A header can be anything; do not hash megabytes for a lookup that cannot match.
  if (typeof rawKey !== 'string' || rawKey.length === 0 || rawKey.length > 256) return null;
  const ring = keyRing(keys);
  const hashes = apiKeyHashers(ring).map((h) => h(rawKey));
  const { rows } = await q.query<{ tenant_id: string; key_id: string; key_hash: Buffer; key_version: number }>(
    `SELECT tenant_id, key_id, key_hash, key_version FROM api_keys
     WHERE key_hash = ANY($1::bytea[]) AND revoked_at IS NULL`,
    [hashes],
  );
  const row = rows[0];
  if (!row) return null;
  const version = keyVersionOf(ring.current);
  if (!row.key_hash.equals(hashes[0]!) || row.key_version !== version) {
    // Guarded on the old hash: two nodes upgrading the same key at once write it once.
    await q.query(
      `UPDATE api_keys SET key_hash = $1, key_version = $2
       WHERE key_id = $3 AND key_hash = $4 AND revoked_at IS NULL`,
      [hashes[0], version, row.key_id, row.key_hash],
    );
  }
  return { tenantId: row.tenant_id, keyId: row.key_id };
}

/** Live keys whose hash was made under another master key than `current` (still to upgrade). */
export async function countStaleApiKeys(q: Queryable, current: string): Promise<number> {
  const { rows } = await q.query<{ n: string }>(
    'SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL AND key_version <> $1',
    [keyVersionOf(current)],
  );
  return Number(rows[0]!.n);
}
