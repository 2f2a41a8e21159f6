/**
 * GitHub clients for the code-host connector: an Octokit per install, authenticated as
 * the App's installation through @octokit/auth-app (App JWT RS256 with `iss` = App id,
 * installation tokens minted on demand, a brand-new token answering 401 retried for up to
 * 5 s as GitHub documents for token replication), plus the token itself for callers that
 * need it raw (the indexer's clone, INTERFACE §6).
 *
 * Tokens are cached cluster-wide: auth-app's cache port is backed by the install's
 * encrypted credentials in Postgres, so every node shares one token until it is within
 * `REFRESH_MARGIN_MS` of `expires_at`, when the next call mints a new one.
 *
 * STYLE.md: no retry or throttling plugin (`@octokit/rest` ships neither); pacing and
 * backoff belong to the actors. Every request has a timeout.
 */
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import type pg from 'pg';
import type { Config } from '../../config.js';
import { Conflict, ErrorCodes, Internal, NotConfigured } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CredentialCipher } from '../../store/credential-cipher.js';
import type { Install } from '../../store/installs.js';
import {
  readCodehostSecret,
  storeInstallationToken,
  type CachedInstallationToken,
} from '../../store/codehost-credentials.js';

/** Which install, and the GitHub installation it is bound to. */
export interface InstallRef {
  installId: string;
  tenantId: string;
  githubInstallationId: number;
}

/** A code-host install's ref: its external id is the installation id (INTERFACE §3). */
export function installRefOf(install: Pick<Install, 'install_id' | 'tenant_id' | 'external_id'>): InstallRef {
  const githubInstallationId = Number(install.external_id);
  if (!Number.isSafeInteger(githubInstallationId) || githubInstallationId <= 0) {
    throw new Internal(`install ${install.install_id} is not bound to a GitHub installation id`);
  }
  return { installId: install.install_id, tenantId: install.tenant_id, githubInstallationId };
}

export interface GithubClientDeps {
  config: Readonly<Config>;
  log: Logger;
  pool: pg.Pool;
  cipher: CredentialCipher;
  /** Per-request timeout; default `REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs?: number;
}

export interface GithubClients {
  /** Acts as the installation of `install`; `/app` routes go out with the App JWT. */
  forInstall(install: InstallRef): Octokit;
  /** Acts as the App itself (JWT): `/app` routes only. */
  forApp(): Octokit;
  /** A valid installation token (from the cache, or minted; `refresh` always mints). */
  installationToken(install: InstallRef, opts?: { refresh?: boolean }): Promise<{ token: string; expiresAt: string }>;
  /**
   * Mints a token for an installation no install is bound to yet (the admin-install
   * proof); its cache entry, or null when this call joined a concurrent mint. Throws
   * Octokit's error.
   */
  mintUnbound(githubInstallationId: number): Promise<CachedInstallationToken | null>;
  /**
   * Revokes the install's cached token upstream (`DELETE /installation/token`) without
   * minting one; false when there is no live cached token. 401 means it is dead already.
   */
  revokeCachedToken(install: InstallRef, signal: AbortSignal): Promise<boolean>;
}

const REQUEST_TIMEOUT_MS = 10_000;
/** "Refreshed before expires_at": a token with less than this left is replaced. */
const REFRESH_MARGIN_MS = 5 * 60_000;
/** GitHub's installation tokens live an hour; used if the expiry cannot be read. */
const FALLBACK_LIFETIME_MS = 55 * 60_000;

interface AuthCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
}

type InstallationAuth = (o: {
  type: 'installation';
  refresh?: boolean;
}) => Promise<{ token: string; expiresAt: string }>;

/** auth-app's cache value is `token|createdAt|expiresAt|...`; the expiry is what we need. */
export function expiresAtOf(cacheValue: string, nowMs = Date.now()): string {
  const t = Date.parse(cacheValue.split('|')[2] ?? '');
  return new Date(Number.isFinite(t) ? t : nowMs + FALLBACK_LIFETIME_MS).toISOString();
}

export function createGithubClients(deps: GithubClientDeps): GithubClients {
  const { config, pool, cipher } = deps;
  const appId = config.codehost.appId;
  const privateKey = config.codehost.privateKeyPem;
  const timeoutMs = deps.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const log = deps.log.child({ component: 'github' });
  // Octokit logs every request at info and every 4xx at error; callers classify and log.
  const octokitLog = {
    debug: () => undefined,
    info: (m: string) => log.debug(m),
    warn: (m: string) => log.warn(m),
    error: (m: string) => log.debug(m),
  };
  const fetchWithTimeout = (url: string | URL | Request, init: RequestInit = {}) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    return fetch(url, { ...init, signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
  };

  const make = (auth: Record<string, unknown>) => {
    if (appId === null || privateKey === null)
      throw new NotConfigured('the code-host App is not configured (CODEHOST_APP_ID, CODEHOST_APP_PRIVATE_KEY_PEM)');
    return new Octokit({
      baseUrl: config.codehost.apiUrl,
      userAgent: 'connector-service',
      log: octokitLog,
      request: { fetch: fetchWithTimeout },
      authStrategy: createAppAuth,
      auth: { appId, privateKey, ...auth },
    });
  };

  const credentialCache = (install: InstallRef): AuthCache => {
    const binding = { tenantId: install.tenantId, installId: install.installId };
    return {
      async get(key) {
        const secret = await readCodehostSecret(pool, cipher, binding);
        // Revoked credentials mean an uninstalled install: it gets no token at all.
        if (!secret) throw new Conflict('install is not active', { code: ErrorCodes.installNotActive });
        const t = secret.token;
        if (!t || t.cache_key !== key || Date.parse(t.expires_at) - Date.now() < REFRESH_MARGIN_MS) return undefined;
        return t.cache_value;
      },
      async set(key, value) {
        const token = { cache_key: key, cache_value: value, expires_at: expiresAtOf(value) };
        if (!(await storeInstallationToken(pool, cipher, binding, token))) {
          throw new Conflict('install is not active', { code: ErrorCodes.installNotActive });
        }
      },
    };
  };

  const forInstall = (install: InstallRef) =>
    make({ installationId: install.githubInstallationId, cache: credentialCache(install) });

  return {
    forInstall,
    forApp: () => make({}),
    async installationToken(install, opts = {}) {
      const auth = forInstall(install).auth as unknown as InstallationAuth;
      const a = await auth({ type: 'installation', refresh: opts.refresh === true });
      return { token: a.token, expiresAt: a.expiresAt };
    },
    async revokeCachedToken(install, signal) {
      const secret = await readCodehostSecret(pool, cipher, {
        tenantId: install.tenantId,
        installId: install.installId,
      });
      const cached = secret?.token;
      const token = cached?.cache_value.split('|')[0];
      if (!cached || !token || Date.parse(cached.expires_at) <= Date.now()) return false;
      const octokit = new Octokit({
        baseUrl: config.codehost.apiUrl,
        userAgent: 'connector-service',
        log: octokitLog,
        request: { fetch: fetchWithTimeout },
        auth: token,
      });
      try {
        await octokit.request('DELETE /installation/token', { request: { signal } });
      } catch (err) {
        if ((err as { status?: unknown }).status === 401) return false;
        throw err;
      }
      return true;
    },
    async mintUnbound(githubInstallationId) {
      let captured: { key: string; value: string } | null = null;
      const cache: AuthCache = {
        get: async () => undefined,
        set: async (key, value) => {
          captured = { key, value };
        },
      };
      const auth = make({ installationId: githubInstallationId, cache }).auth as unknown as InstallationAuth;
      const a = await auth({ type: 'installation', refresh: true });
      // auth-app shares one in-flight mint per installation within a process; a caller that
      // joined another's mint got a valid token but no cache entry, and stores none.
      const entry = captured as { key: string; value: string } | null;
      return entry ? { cache_key: entry.key, cache_value: entry.value, expires_at: a.expiresAt } : null;
    },
  };
}
