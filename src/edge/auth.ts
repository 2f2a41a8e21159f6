/**
 * Tenant auth (spec §5): `Authorization: Bearer <API_KEY>` identifies the tenant.
 *
 * Only a keyed hash of each key is stored; the resolver looks a key up by that hash, so
 * the comparison is an index lookup on an HMAC the caller cannot steer (nothing to time).
 * Results are cached under a SHA-256 of the key, never the key itself, so a flood of
 * requests costs one query per key per minute. INTERFACE §9.1: a revoked key is refused by
 * every node within 5 s, so hits are kept 60 s only while the node hears revocations
 * (`setLive(true)`, Postgres `api_keys_changed`; `invalidate()` drops the cache); while it
 * does not, hits live 2 s.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { ApiScope } from '../api-scopes.js';
import { Unauthorized } from '../errors.js';
import type { KeyGrant } from '../store/api-keys.js';

export type { KeyGrant };

/** The grant of a live key (not revoked, not expired), or null. */
export type TenantResolver = (rawKey: string) => Promise<KeyGrant | null>;

declare module 'fastify' {
  interface FastifyRequest {
    tenantId: string;
    /** The caller's key on a tenant route: its id and scopes (MCP tools check theirs against these). */
    apiKey: { keyId: string; scopes: readonly ApiScope[] };
  }
}

const HIT_TTL_MS = 60_000;
const DEAF_HIT_TTL_MS = 2_000;
const MISS_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export type TenantAuth = ReturnType<typeof createTenantAuth>;

export interface TenantAuthOptions {
  now?: () => number;
  /** Told of every authenticated request's key (`last_used_at`, which throttles its own writes). */
  used?: (keyId: string) => void;
}

export function createTenantAuth(resolve: TenantResolver, opts: TenantAuthOptions = {}) {
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { grant: KeyGrant | null; expires: number }>();
  let live = false;
  // Bumped by every invalidation: a lookup that started before one must not cache its answer.
  let generation = 0;

  async function lookup(rawKey: string): Promise<KeyGrant | null> {
    const k = createHash('sha256').update(rawKey).digest('base64url');
    const hit = cache.get(k);
    // An expiring key's hit ends when the key does (§10.4: expired answers 401 like revoked).
    if (hit && hit.expires > now() && (hit.grant?.expiresAt ?? Infinity) > now()) return hit.grant;
    const started = generation;
    const grant = await resolve(rawKey);
    if (started !== generation) return grant;
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(k, { grant, expires: now() + (grant ? (live ? HIT_TTL_MS : DEAF_HIT_TTL_MS) : MISS_TTL_MS) });
    return grant;
  }

  /**
   * Resolves the caller's key or throws Unauthorized (401 for missing, malformed, unknown,
   * revoked or expired keys).
   */
  async function authenticate(req: FastifyRequest): Promise<KeyGrant> {
    const header = req.headers.authorization;
    if (typeof header !== 'string' || header.length === 0)
      throw new Unauthorized('missing Authorization: Bearer <API_KEY>');
    const m = /^Bearer\s+([A-Za-z0-9_\-.~+/=]{8,512})\s*$/i.exec(header);
    if (!m) throw new Unauthorized('malformed Authorization header: expected Bearer <API_KEY>');
    const grant = await lookup(m[1]!);
    if (!grant || (grant.expiresAt !== null && grant.expiresAt <= now()))
      throw new Unauthorized('unknown, revoked or expired API key');
    req.tenantId = grant.tenantId;
    req.apiKey = { keyId: grant.keyId, scopes: grant.scopes };
    opts.used?.(grant.keyId);
    return grant;
  }

  /** A key was revoked or changed somewhere in the cluster: forget every cached answer. */
  function invalidate(): void {
    generation++;
    cache.clear();
  }

  /** Whether revocations are being heard; on any change the cache starts over. */
  function setLive(listening: boolean): void {
    live = listening;
    invalidate();
  }

  return { authenticate, invalidate, setLive };
}
