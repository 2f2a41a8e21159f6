/**
 * OAuth states (INTERFACE §3 `oauth/start`, `oauth/callback`): single-use, expiring, and
 * bound to tenant, connector and redirect_uri, and to where the installer's browser goes
 * afterwards when the caller named it (§10.7 `success_url`, `failure_url`). The raw state travels through the
 * installer's browser; only its SHA-256 is stored, and consuming it is one DELETE, so two
 * callbacks racing with one state cannot both succeed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { RateLimited } from '../errors.js';
import type { Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface OAuthState {
  tenantId: string;
  connectorId: string;
  redirectUri: string;
  /** §10.7: the browser is sent here (303) with `install_id` after a successful install. */
  successUrl: string | null;
  /** §10.7: the browser is sent here (303) with `error` (a §2 code) after a failed one. */
  failureUrl: string | null;
}

const hash = (state: string) => createHash('sha256').update(state, 'utf8').digest();

/**
 * INTERFACE §9.2 abuse limits: unexpired states a tenant may hold at once. An install flow
 * needs one; a script calling oauth/start in a loop would otherwise grow the table without
 * bound for 10 minutes.
 */
export const MAX_LIVE_STATES_PER_TENANT = 100;

/**
 * Creates a state; returns the raw value (shown once) and its expiry. RateLimited (429)
 * while the tenant holds MAX_LIVE_STATES_PER_TENANT unexpired states, with Retry-After
 * until its oldest one expires.
 */
export async function createOAuthState(
  q: Queryable,
  s: OAuthState,
  ttlMs: number,
): Promise<{ state: string; expiresAt: Date }> {
  const state = randomBytes(32).toString('base64url');
  // One statement: the count and the insert see the same snapshot (a burst of concurrent
  // calls may overshoot the cap by its own size, never grow it without bound).
  const { rows } = await q.query<{ expires_at: Date | null; retry_s: number | null }>(
    `WITH live AS (
       SELECT count(*) AS n, min(expires_at) AS oldest FROM oauth_states WHERE tenant_id = $2 AND expires_at > now()
     ), ins AS (
       INSERT INTO oauth_states (state_hash, tenant_id, connector_id, redirect_uri, success_url, failure_url, expires_at)
       SELECT $1, $2, $3, $4, $7, $8, now() + make_interval(secs => $5) FROM live WHERE live.n < $6
       RETURNING expires_at
     )
     SELECT (SELECT expires_at FROM ins) AS expires_at,
            (SELECT extract(epoch FROM oldest - now())::float8 FROM live) AS retry_s`,
    [
      hash(state),
      s.tenantId,
      s.connectorId,
      sanitizeText(s.redirectUri),
      ttlMs / 1000,
      MAX_LIVE_STATES_PER_TENANT,
      s.successUrl === null ? null : sanitizeText(s.successUrl),
      s.failureUrl === null ? null : sanitizeText(s.failureUrl),
    ],
  );
  const r = rows[0]!;
  if (r.expires_at === null) {
    throw new RateLimited(
      `this tenant already has ${MAX_LIVE_STATES_PER_TENANT} unexpired OAuth states; finish or wait for one`,
      r.retry_s ?? 1,
    );
  }
  // Expired states are useless; sweeping a few on each start keeps the table small.
  await q.query(
    `DELETE FROM oauth_states WHERE state_hash IN
       (SELECT state_hash FROM oauth_states WHERE expires_at < now() - interval '1 hour' LIMIT 100)`,
  );
  return { state, expiresAt: r.expires_at };
}

/** Consumes a state: the binding when it existed and had not expired, else null. Never twice. */
export async function consumeOAuthState(q: Queryable, state: string): Promise<OAuthState | null> {
  if (typeof state !== 'string' || state.length === 0 || state.length > 200) return null;
  const { rows } = await q.query<{
    tenant_id: string;
    connector_id: string;
    redirect_uri: string;
    success_url: string | null;
    failure_url: string | null;
    live: boolean;
  }>(
    `DELETE FROM oauth_states WHERE state_hash = $1
     RETURNING tenant_id, connector_id, redirect_uri, success_url, failure_url, expires_at > now() AS live`,
    [hash(state)],
  );
  const r = rows[0];
  if (!r || !r.live) return null;
  return {
    tenantId: r.tenant_id,
    connectorId: r.connector_id,
    redirectUri: r.redirect_uri,
    successUrl: r.success_url,
    failureUrl: r.failure_url,
  };
}
