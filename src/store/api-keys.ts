/**
 * API-key lifecycle (INTERFACE §9.1, §10.4): another key for a tenant with its scopes, label
 * and expiry, the listing, revocation, and the Bearer lookup. Only a hash of a key is stored
 * (the raw key is shown once): its SHA-256, which no master key enters, so a rotation of
 * SERVICE_MASTER_KEY never strands a key (issue 32). A key hashed before that (an HMAC under a
 * master key) is found with the hash keys the keyring keeps, and moves to SHA-256 on use.
 */
import { API_SCOPES, knownScopes, type ApiScope } from '../api-scopes.js';
import { BadRequest, NotFound } from '../errors.js';
import {
  apiKeyDisplayPrefix,
  apiKeyHashKey,
  DATA_KEY_VERSION,
  generateApiKey,
  hashApiKey,
  legacyApiKeyHash,
} from './credential-cipher.js';
import type { Keyring } from './data-keys.js';
import { isUuid, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

/** `key_version` of a SHA-256 key hash (others are the fingerprint of the master key whose HMAC made it). */
export const SHA256_KEY_VERSION = DATA_KEY_VERSION;

export interface CreatedApiKey {
  key_id: string;
  /** The raw key: returned here once, never stored. */
  api_key: string;
}

/** A single master key, or the deployment's keys and data keys (what finds keys hashed the old way). */
export type KeyRing = string | Keyring;

const keyRing = (k: KeyRing): Keyring => (typeof k === 'string' ? { current: k, previous: [] } : k);

/** The hashes a key may be stored under: SHA-256 first, then each old-style HMAC the keyring can make. */
function candidateHashes(ring: Keyring, rawKey: string): Buffer[] {
  const hashKeys = [...[ring.current, ...ring.previous].map(apiKeyHashKey), ...(ring.legacyApiKeyHashKeys ?? [])];
  const seen = new Set<string>();
  const out = [hashApiKey(rawKey)];
  for (const k of hashKeys) {
    const id = k.toString('hex');
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(legacyApiKeyHash(k, rawKey));
  }
  return out;
}

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
function keyColumns(opts: ApiKeyOptions = {}): {
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
  // No master key enters the hash any more; kept so every caller names the deployment's keys alike.
  _keys: KeyRing,
  tenantId: string,
  opts: ApiKeyOptions = {},
): Promise<CreatedApiKey> {
  if (!isUuid(tenantId)) throw new NotFound('tenant not found');
  const { scopes, label, days } = keyColumns(opts);
  const apiKey = generateApiKey();
  const { rows } = await q.query<{ key_id: string }>(
    `INSERT INTO api_keys (key_hash, tenant_id, key_prefix, key_version, scopes, label, expires_at)
     SELECT $1, tenant_id, $3, $4, $5, $6, now() + make_interval(secs => $7::float8 * 86400)
     FROM tenants WHERE tenant_id = $2
     RETURNING key_id`,
    [hashApiKey(apiKey), tenantId, apiKeyDisplayPrefix(apiKey), SHA256_KEY_VERSION, scopes, label, days],
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
 * found under an old-style HMAC is re-hashed with SHA-256 at once; every node, on whichever
 * master key, finds it then.
 */
export async function findApiKey(q: Queryable, keys: KeyRing, rawKey: string): Promise<KeyGrant | null> {
  // A header can be anything; do not hash megabytes for a lookup that cannot match.
  if (typeof rawKey !== 'string' || rawKey.length === 0 || rawKey.length > 256) return null;
  const hashes = candidateHashes(keyRing(keys), rawKey);
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
  if (row.key_version !== SHA256_KEY_VERSION) {
    // Guarded on the old hash: two nodes upgrading the same key at once write it once.
    await q.query(
      `UPDATE api_keys SET key_hash = $1, key_version = $2
       WHERE key_id = $3 AND key_hash = $4 AND revoked_at IS NULL`,
      [hashes[0], SHA256_KEY_VERSION, row.key_id, row.key_hash],
    );
  }
  return {
    tenantId: row.tenant_id,
    keyId: row.key_id,
    scopes: knownScopes(row.scopes),
    expiresAt: row.expires_at === null ? null : row.expires_at.getTime(),
  };
}

/** Live keys still hashed the old way (found through the kept hash keys until their next use). */
export async function countStaleApiKeys(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: string }>(
    'SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL AND key_version <> $1',
    [SHA256_KEY_VERSION],
  );
  return Number(rows[0]!.n);
}
