/**
 * An install's bot credentials, with token rotation (Slack's token rotation): when Slack's
 * `oauth.v2.access` answered with `expires_in` / `refresh_token`, the token is refreshed
 * before it expires, by whichever caller needs it first, and only one refresh runs at a
 * time across the cluster: the refresher holds the credentials row lock while it calls
 * Slack, a second caller waits on the lock and then finds the fresh token.
 */
import { z } from 'zod';
import type { Config } from '../../config.js';
import { Conflict, ErrorCodes, NotConfigured, UpstreamError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CredentialCipher } from '../../store/credential-cipher.js';
import { getCredentials, putCredentials } from '../../store/credentials.js';
import { lockLiveCredentials } from '../../store/chat-credentials.js';
import { withTx } from '../../store/db.js';
import type { Install } from '../../store/installs.js';
import type pg from 'pg';
import { slackClient } from './slack-client.js';
import { toSlackAppError } from './slack-errors.js';

export const ChatSecret = z.object({
  bot_token: z.string().min(1),
  bot_user_id: z.string().min(1),
  bot_id: z.string().nullable(),
  app_id: z.string().min(1),
  scopes: z.array(z.string()),
  team: z.object({ id: z.string().min(1), name: z.string().nullable() }),
  refresh_token: z.string().optional(),
  /** ISO; present only with token rotation. */
  expires_at: z.string().optional(),
  issued_at: z.string().optional(),
});
export type ChatSecret = z.infer<typeof ChatSecret>;

/** Refresh this long before expiry: 5 minutes, or half the token's life when shorter. */
const REFRESH_MARGIN_MS = 5 * 60_000;

export function needsRefresh(s: ChatSecret, now: number): boolean {
  if (!s.expires_at || !s.refresh_token) return false;
  const expires = Date.parse(s.expires_at);
  const issued = s.issued_at ? Date.parse(s.issued_at) : expires - 2 * REFRESH_MARGIN_MS;
  const margin = Math.min(REFRESH_MARGIN_MS, Math.max(0, (expires - issued) / 2));
  return expires - now <= margin;
}

/** The credential fields of an `oauth.v2.access` answer that rotate. */
export function rotatingFields(res: { refresh_token?: string; expires_in?: number }, now: number): Partial<ChatSecret> {
  if (!res.refresh_token || !res.expires_in) return {};
  return {
    refresh_token: res.refresh_token,
    expires_at: new Date(now + res.expires_in * 1000).toISOString(),
    issued_at: new Date(now).toISOString(),
  };
}

export interface TokenDeps {
  config: Readonly<Config>;
  pool: pg.Pool;
  cipher: CredentialCipher;
  log: Logger;
}

export interface BotCredentials {
  /** The install's live secret, refreshed first when it is about to expire. */
  get(install: Install, signal: AbortSignal): Promise<ChatSecret>;
}

const notActive = () => new Conflict('the install has no live credentials', { code: ErrorCodes.installNotActive });

export function botCredentials(deps: TokenDeps, now: () => number = Date.now): BotCredentials {
  const read = async (q: pg.Pool | pg.PoolClient, install: Install): Promise<ChatSecret> => {
    const raw = await getCredentials(q, deps.cipher, { tenantId: install.tenant_id, installId: install.install_id });
    if (raw === null) throw notActive();
    return ChatSecret.parse(raw);
  };

  const refresh = (install: Install, signal: AbortSignal): Promise<ChatSecret> =>
    withTx(
      deps.pool,
      async (tx) => {
        if (!(await lockLiveCredentials(tx, install.install_id, install.tenant_id))) throw notActive();
        const current = await read(tx, install);
        // Another caller refreshed while we waited for the lock.
        if (!needsRefresh(current, now())) return current;
        const { clientId, clientSecret, apiUrl } = deps.config.chatapp;
        if (!clientId || !clientSecret)
          throw new NotConfigured('CHATAPP_CLIENT_ID and CHATAPP_CLIENT_SECRET are needed to refresh chat tokens');
        let res;
        try {
          res = await slackClient({ apiUrl, log: deps.log, signal }).oauth.v2.access({
            client_id: clientId,
            client_secret: clientSecret,
            grant_type: 'refresh_token',
            refresh_token: current.refresh_token!,
          });
        } catch (err) {
          throw toSlackAppError(err, 'oauth.v2.access (refresh)', signal);
        }
        if (!res.access_token) throw new UpstreamError('Slack answered the token refresh without an access_token');
        const next: ChatSecret = { ...current, bot_token: res.access_token, ...rotatingFields(res, now()) };
        await putCredentials(tx, deps.cipher, {
          tenantId: install.tenant_id,
          installId: install.install_id,
          secret: next,
        });
        deps.log.info({ installId: install.install_id, expiresAt: next.expires_at }, 'chat bot token refreshed');
        return next;
      },
      { maxAttempts: 1 },
    );

  return {
    async get(install, signal) {
      const current = await read(deps.pool, install);
      return needsRefresh(current, now()) ? refresh(install, signal) : current;
    },
  };
}
