/**
 * A code-host install's credentials: the installation token the App minted for it, held
 * only as ciphertext in `credentials` (spec §5 "At rest"; INTERFACE §6: the token is never
 * stored outside its encrypted credentials). Every node reads the same row, so a token
 * minted on one node serves the whole cluster until it is refreshed.
 */
import type { CredentialBinding, CredentialCipher } from './credential-cipher.js';
import { getCredentials } from './credentials.js';
import { isUuid, type Queryable } from './db.js';

/** An installation token as @octokit/auth-app caches it (key and value are its own format). */
export interface CachedInstallationToken {
  cache_key: string;
  cache_value: string;
  /** ISO time GitHub said the token expires. */
  expires_at: string;
}

export interface CodehostSecret {
  github_installation_id: number;
  app_id: number;
  token: CachedInstallationToken | null;
}

function isToken(v: unknown): v is CachedInstallationToken {
  const t = v as CachedInstallationToken | null;
  return (
    !!t && typeof t.cache_key === 'string' && typeof t.cache_value === 'string' && typeof t.expires_at === 'string'
  );
}

/** The live (not revoked) secret, or null. */
export async function readCodehostSecret(
  q: Queryable,
  cipher: CredentialCipher,
  binding: CredentialBinding,
): Promise<CodehostSecret | null> {
  const raw = await getCredentials(q, cipher, binding);
  if (!raw) return null;
  return {
    github_installation_id: Number(raw.github_installation_id),
    app_id: Number(raw.app_id),
    token: isToken(raw.token) ? raw.token : null,
  };
}

/**
 * Replaces the cached token of a live credential. Returns false when the credentials are
 * revoked or absent: an uninstalled install never gets a token back (unlike
 * `putCredentials`, which would clear the revocation).
 */
export async function storeInstallationToken(
  q: Queryable,
  cipher: CredentialCipher,
  binding: CredentialBinding,
  token: CachedInstallationToken,
): Promise<boolean> {
  if (!isUuid(binding.tenantId) || !isUuid(binding.installId)) return false;
  const current = await readCodehostSecret(q, cipher, binding);
  if (!current) return false;
  const sealed = cipher.encrypt(JSON.stringify({ ...current, token } satisfies CodehostSecret), binding);
  const { rowCount } = await q.query(
    `UPDATE credentials SET key_version = $3, nonce = $4, ciphertext = $5, tag = $6, updated_at = now()
     WHERE install_id = $1 AND tenant_id = $2 AND revoked_at IS NULL`,
    [binding.installId, binding.tenantId, sealed.keyVersion, sealed.nonce, sealed.ciphertext, sealed.tag],
  );
  return (rowCount ?? 0) > 0;
}
