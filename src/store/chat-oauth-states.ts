/**
 * OAuth states (INTERFACE §3 `oauth/start`, `oauth/callback`): single-use, expiring, and
 * bound to tenant, connector and redirect_uri. The raw state travels through the
 * installer's browser; only its SHA-256 is stored, and consuming it is one DELETE, so two
 * callbacks racing with one state cannot both succeed.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface OAuthState {
  tenantId: string;
  connectorId: string;
  redirectUri: string;
}

const hash = (state: string) => createHash('sha256').update(state, 'utf8').digest();

/** Creates a state; returns the raw value (shown once) and its expiry. */
export async function createOAuthState(
  q: Queryable,
  s: OAuthState,
  ttlMs: number,
): Promise<{ state: string; expiresAt: Date }> {
  const state = randomBytes(32).toString('base64url');
  const { rows } = await q.query<{ expires_at: Date }>(
    `INSERT INTO oauth_states (state_hash, tenant_id, connector_id, redirect_uri, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
     RETURNING expires_at`,
    [hash(state), s.tenantId, s.connectorId, sanitizeText(s.redirectUri), ttlMs / 1000],
  );
  // Expired states are useless; sweeping a few on each start keeps the table small.
  await q.query(
    `DELETE FROM oauth_states WHERE state_hash IN
       (SELECT state_hash FROM oauth_states WHERE expires_at < now() - interval '1 hour' LIMIT 100)`,
  );
  return { state, expiresAt: rows[0]!.expires_at };
}

/** Consumes a state: the binding when it existed and had not expired, else null. Never twice. */
export async function consumeOAuthState(q: Queryable, state: string): Promise<OAuthState | null> {
  if (typeof state !== 'string' || state.length === 0 || state.length > 200) return null;
  const { rows } = await q.query<{ tenant_id: string; connector_id: string; redirect_uri: string; live: boolean }>(
    `DELETE FROM oauth_states WHERE state_hash = $1
     RETURNING tenant_id, connector_id, redirect_uri, expires_at > now() AS live`,
    [hash(state)],
  );
  const r = rows[0];
  if (!r || !r.live) return null;
  return { tenantId: r.tenant_id, connectorId: r.connector_id, redirectUri: r.redirect_uri };
}
