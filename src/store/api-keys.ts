/**
 * API-key lifecycle (INTERFACE §9.1, §10.4): another key for a tenant with its scopes, label
 * and expiry, the listing, revocation, and the Bearer lookup that accepts hashes made under a
 * previous master key and upgrades them on use (INTERFACE §9.2). Only a keyed hash of a key
 * is ever stored; the raw key is shown once.
 */
import { API_SCOPES, knownScopes, type ApiScope } from '../api-scopes.js';
import { BadRequest, NotFound } from '../errors.js';
import {
  apiKeyDisplayPrefix,
  apiKeyHashers,
  generateApiKey,
  keyVersionOf,
  type MasterKeys,
} from './credential-cipher.js';
import { isUuid, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface CreatedApiKey {
  key_id: string;
  /** The raw key: returned here once, never stored. */
  api_key: string;
}

/** A single master key, or the deployment's keys during a rotation. */
export type KeyRing = string | MasterKeys;

export const keyRing = (k: KeyRing): MasterKeys => (typeof k === 'string' ? { current: k, previous: [] } : k);

/** What a key may do and for how long (INTERFACE §10.4); every field optional. */
export interface ApiKeyOptions {
  /** Default: every scope. At least one. */
  scopes?: readonly ApiScope[];
  /** Whole or fractional days from now; default: never expires. */
  expiresInDays?: number;
  label?: string;
}

/** The valid key a Bearer header names: its tenant, id, scopes and expiry. */
export interface KeyGrant {
  tenantId: string;
  keyId: string;
  scopes: readonly ApiScope[];
  /** Epoch ms, or null for a key that does not expire. */
  expiresAt: number | null;
}

/** One line of `api-keys list` (never the key nor its hash). */
export interface ApiKeyListing {
  key_id: string;
  label: string | null;
  scopes: ApiScope[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked: boolean;
}

/** The columns of a new key besides its hash: scopes, label and expiry, checked. */
export function keyColumns(opts: ApiKeyOptions = {}): {
  scopes: ApiScope[];
  label: string | null;
  days: number | null;
} {
  const scopes = opts.scopes === undefined ? [...API_SCOPES] : knownScopes(opts.scopes);
  if (scopes.length === 0) throw new BadRequest(`scopes: name at least one of ${API_SCOPES.join(', ')}`);
  const label = opts.label === undefined ? null : sanitizeText(opts.label).trim();
  if (label !== null && (label.length === 0 || label.length > 200)) throw new BadRequest('label: 1-200 characters');
  const days = opts.expiresInDays ?? null;
  if (days !== null && !(Number.isFinite(days) && days > 0 && days <= 36_500)) {
    throw new BadRequest('expires-in: a number of days above 0, at most 36500');
  }
  return { scopes, label, days };
}

/** Another key of an existing tenant; NotFound for an unknown tenant, BadRequest for bad options. */
export async function createApiKey(
  q: Queryable,
  keys: KeyRing,
  tenantId: string,
  opts: ApiKeyOptions = {},
): Promise<CreatedApiKey> {
  if (!isUuid(tenantId)) throw new NotFound('tenant not found');
  const { scopes, label, days } = keyColumns(opts);
  const ring = keyRing(keys);
  const apiKey = generateApiKey();
  const { rows } = await q.query<{ key_id: string }>(
    `INSERT INTO api_keys (key_hash, tenant_id, key_prefix, key_version, scopes, label, expires_at)
     SELECT $1, tenant_id, $3, $4, $5, $6, now() + make_interval(secs => $7::float8 * 86400)
     FROM tenants WHERE tenant_id = $2
     RETURNING key_id`,
    [
      apiKeyHashers(ring)[0]!(apiKey),
      tenantId,
      apiKeyDisplayPrefix(apiKey),
      keyVersionOf(ring.current),
      scopes,
      label,
      days,
    ],
  );
  if (!rows[0]) throw new NotFound('tenant not found');
  return { key_id: rows[0].key_id, api_key: apiKey };
}

/** A tenant's keys, oldest first, revoked ones included (INTERFACE §10.4 `api-keys list`). */
export async function listApiKeys(q: Queryable, tenantId: string): Promise<ApiKeyListing[]> {
  if (!isUuid(tenantId)) throw new NotFound('tenant not found');
  const { rows } = await q.query<{
    key_id: string;
    label: string | null;
    scopes: string[];
    created_at: Date;
    expires_at: Date | null;
    last_used_at: Date | null;
    revoked: boolean;
    tenant: boolean;
  }>(
    `SELECT k.key_id, k.label, k.scopes, k.created_at, k.expires_at, k.last_used_at,
            k.revoked_at IS NOT NULL AS revoked, true AS tenant
     FROM tenants t LEFT JOIN api_keys k ON k.tenant_id = t.tenant_id
     WHERE t.tenant_id = $1
     ORDER BY k.created_at, k.key_id`,
    [tenantId],
  );
  if (rows.length === 0) throw new NotFound('tenant not found');
  const iso = (d: Date | null) => (d === null ? null : d.toISOString());
  return rows
    .filter((r) => r.key_id !== null)
    .map((r) => ({
      key_id: r.key_id,
      label: r.label,
      scopes: knownScopes(r.scopes),
      created_at: r.created_at.toISOString(),
      expires_at: iso(r.expires_at),
      last_used_at: iso(r.last_used_at),
      revoked: r.revoked,
    }));
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
 * The grant of a Bearer key, or null (unknown, revoked, expired or malformed key). A key
 * found under a previous master key is re-hashed under the current one at once, so it
 * keeps working after that previous key is removed (INTERFACE §9.2).
 */
export async function findApiKey(q: Queryable, keys: KeyRing, rawKey: string): Promise<KeyGrant | null> {
  // A header can be anything; do not hash megabytes for a lookup that cannot match.
  if (typeof rawKey !== 'string' || rawKey.length === 0 || rawKey.length > 256) return null;
  const ring = keyRing(keys);
  const hashes = apiKeyHashers(ring).map((h) => h(rawKey));
  const { rows } = await q.query<{
    tenant_id: string;
    key_id: string;
    key_hash: Buffer;
    key_version: number;
    scopes: string[];
    expires_at: Date | null;
  }>(
    `SELECT tenant_id, key_id, key_hash, key_version, scopes, expires_at FROM api_keys
     WHERE key_hash = ANY($1::bytea[]) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
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
  return {
    tenantId: row.tenant_id,
    keyId: row.key_id,
    scopes: knownScopes(row.scopes),
    expiresAt: row.expires_at === null ? null : row.expires_at.getTime(),
  };
}

/** Live keys whose hash was made under another master key than `current` (still to upgrade). */
export async function countStaleApiKeys(q: Queryable, current: string): Promise<number> {
  const { rows } = await q.query<{ n: string }>(
    'SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL AND key_version <> $1',
    [keyVersionOf(current)],
  );
  return Number(rows[0]!.n);
}
