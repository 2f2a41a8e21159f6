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
import { Unauthorized } from '../errors.js';

export type TenantResolver = (rawKey: string) => Promise<{ tenantId: string } | null>;

declare module 'fastify' {
  interface FastifyRequest {
    tenantId: string;
  }
}

const HIT_TTL_MS = 60_000;
const DEAF_HIT_TTL_MS = 2_000;
const MISS_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export type TenantAuth = ReturnType<typeof createTenantAuth>;

export function createTenantAuth(resolve: TenantResolver, now: () => number = Date.now) {
  const cache = new Map<string, { tenantId: string | null; expires: number }>();
  let live = false;
  // Bumped by every invalidation: a lookup that started before one must not cache its answer.
  let generation = 0;

  async function lookup(rawKey: string): Promise<string | null> {
    const k = createHash('sha256').update(rawKey).digest('base64url');
    const hit = cache.get(k);
    if (hit && hit.expires > now()) return hit.tenantId;
    const started = generation;
    const found = await resolve(rawKey);
    const tenantId = found?.tenantId ?? null;
    if (started !== generation) return tenantId;
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(k, { tenantId, expires: now() + (tenantId ? (live ? HIT_TTL_MS : DEAF_HIT_TTL_MS) : MISS_TTL_MS) });
    return tenantId;
  }

  /** Resolves the caller's tenant or throws Unauthorized (401 for missing, malformed or unknown keys). */
  async function authenticate(req: FastifyRequest): Promise<string> {
    const header = req.headers.authorization;
    if (typeof header !== 'string' || header.length === 0)
      throw new Unauthorized('missing Authorization: Bearer <API_KEY>');
    const m = /^Bearer\s+([A-Za-z0-9_\-.~+/=]{8,512})\s*$/i.exec(header);
    if (!m) throw new Unauthorized('malformed Authorization header: expected Bearer <API_KEY>');
    const tenantId = await lookup(m[1]!);
    if (!tenantId) throw new Unauthorized('unknown API key');
    req.tenantId = tenantId;
    return tenantId;
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
