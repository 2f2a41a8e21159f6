/**
 * The chat install (spec §3.1, INTERFACE §3 `oauth/start` and `oauth/callback`).
 *
 * Start: a single-use state bound to tenant, connector and redirect_uri, valid 10
 * minutes, and the `authorize_url` on `CHATAPP_AUTHORIZE_URL`.
 * Callback: the state is consumed first (a replay finds nothing), the code is exchanged
 * with `oauth.v2.access` (same redirect_uri), `auth.test` tells the bot's `bot_id`, and
 * then one transaction writes the install row, the encrypted credentials, the bot identity
 * and the workspace claim, whose team_id key lets exactly one of two racing installs win.
 */
import type pg from 'pg';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { BadRequest, Conflict, ErrorCodes, NotConfigured, UpstreamError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CredentialCipher } from '../../store/credential-cipher.js';
import { putCredentials } from '../../store/credentials.js';
import { claimWorkspace, saveBotIdentity, workspaceClaimed } from '../../store/chat-claims.js';
import { consumeOAuthState, createOAuthState, type OAuthState } from '../../store/chat-oauth-states.js';
import { recordAudit } from '../../store/audit-log.js';
import { withTx } from '../../store/db.js';
import { createInstall } from '../../store/installs.js';
import { rotatingFields, type ChatSecret } from './bot-token.js';
import { slackClient } from './slack-client.js';
import { toSlackAppError } from './slack-errors.js';
import { missingGroupDmHistory, parseScopes } from './scopes.js';

/** INTERFACE §3: states expire in 10 minutes. */
const STATE_TTL_MS = 10 * 60_000;

export interface InstallDeps {
  config: Readonly<Config>;
  pool: pg.Pool;
  cipher: CredentialCipher;
  log: Logger;
  /** Starts the install's backfill walker; a failure is logged (shard resumes retry it). */
  startBackfill(installId: string): Promise<void>;
}

export interface InstallResult {
  install_id: string;
  connector_id: 'chatapp';
  status: 'active';
  team_id: string;
  team_name: string | null;
}

function oauthClient(config: Readonly<Config>): { clientId: string; clientSecret: string } {
  const { clientId, clientSecret } = config.chatapp;
  if (!clientId || !clientSecret)
    throw new NotConfigured('the chat connector is not configured: set CHATAPP_CLIENT_ID and CHATAPP_CLIENT_SECRET');
  return { clientId, clientSecret };
}

/** INTERFACE §10.7: where the installer's browser goes after the callback, if anywhere. */
export interface ReturnUrls {
  successUrl: string | null;
  failureUrl: string | null;
}

export async function startAuthorization(
  deps: InstallDeps,
  tenantId: string,
  redirectUri: string,
  returnTo: ReturnUrls = { successUrl: null, failureUrl: null },
) {
  const { clientId } = oauthClient(deps.config);
  const { state, expiresAt } = await createOAuthState(
    deps.pool,
    { tenantId, connectorId: 'chatapp', redirectUri, ...returnTo },
    STATE_TTL_MS,
  );
  const url = new URL(deps.config.chatapp.authorizeUrl);
  url.searchParams.set('client_id', clientId);
  url.searchParams.set('scope', deps.config.chatapp.scopes.join(','));
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('state', state);
  return { authorize_url: url.toString(), state, expires_at: expiresAt.toISOString() };
}

const AccessAnswer = z.object({
  access_token: z.string().min(1),
  token_type: z.literal('bot'),
  scope: z.string().default(''),
  bot_user_id: z.string().min(1),
  app_id: z.string().min(1),
  team: z.object({ id: z.string().min(1), name: z.string().nullish() }),
  refresh_token: z.string().optional(),
  expires_in: z.number().int().positive().optional(),
});

export interface CallbackQuery {
  code?: string;
  state?: string;
  error?: string;
}

/**
 * The callback's first step: the state's binding, consumed (a replay finds nothing), or null
 * when it is missing, forged, expired or used. Apart from the rest, so the caller knows the
 * binding (§10.7: where a browser goes) whatever the install's outcome.
 */
export async function consumeCallbackState(deps: InstallDeps, q: CallbackQuery): Promise<OAuthState | null> {
  oauthClient(deps.config); // not configured: refused before the state is spent
  return q.state ? consumeOAuthState(deps.pool, q.state) : null;
}

/** The rest of the callback, for the binding `consumeCallbackState` answered. */
export async function finishAuthorization(
  deps: InstallDeps,
  q: CallbackQuery,
  bound: OAuthState | null,
): Promise<InstallResult> {
  const { clientId, clientSecret } = oauthClient(deps.config);
  if (q.error) {
    throw new BadRequest(`the installer did not authorize the app (${q.error.slice(0, 100)})`, {
      code: ErrorCodes.accessDenied,
    });
  }
  if (!bound || bound.connectorId !== 'chatapp')
    throw new BadRequest('the OAuth state is missing, unknown, expired or already used', {
      code: ErrorCodes.invalidState,
    });
  if (!q.code) throw new BadRequest('the callback carries no code');

  let raw;
  try {
    raw = await slackClient({ apiUrl: deps.config.chatapp.apiUrl, log: deps.log }).oauth.v2.access({
      client_id: clientId,
      client_secret: clientSecret,
      code: q.code,
      redirect_uri: bound.redirectUri,
    });
  } catch (err) {
    throw toSlackAppError(err, 'oauth.v2.access');
  }
  const parsed = AccessAnswer.safeParse(raw);
  if (!parsed.success) throw new UpstreamError('oauth.v2.access answered without a bot token, bot user, app or team');
  const a = parsed.data;

  let botId: string | null;
  try {
    const who = await slackClient({
      apiUrl: deps.config.chatapp.apiUrl,
      log: deps.log,
      token: a.access_token,
    }).auth.test();
    botId = who.bot_id ?? null;
  } catch (err) {
    throw toSlackAppError(err, 'auth.test');
  }

  const scopes = parseScopes(a.scope);
  const now = Date.now();
  const secret: ChatSecret = {
    bot_token: a.access_token,
    bot_user_id: a.bot_user_id,
    bot_id: botId,
    app_id: a.app_id,
    scopes,
    team: { id: a.team.id, name: a.team.name ?? null },
    ...rotatingFields(a, now),
  };

  const install = await withTx(deps.pool, async (tx) => {
    let created;
    try {
      created = await createInstall(tx, {
        tenantId: bound.tenantId,
        connectorId: 'chatapp',
        externalId: a.team.id,
        displayName: a.team.name ?? null,
      });
    } catch (err) {
      // The same tenant's second install of the workspace is the same refusal as another tenant's.
      if (err instanceof Conflict) throw workspaceClaimed(err);
      throw err;
    }
    await claimWorkspace(tx, { teamId: a.team.id, installId: created.install_id, tenantId: bound.tenantId });
    await putCredentials(tx, deps.cipher, { tenantId: bound.tenantId, installId: created.install_id, secret });
    await saveBotIdentity(tx, bound.tenantId, {
      install_id: created.install_id,
      team_id: a.team.id,
      bot_user_id: a.bot_user_id,
      bot_id: botId,
      app_id: a.app_id,
      scopes,
    });
    // INTERFACE §10.5: the install is audited in its own transaction (a browser's callback: no key).
    await recordAudit(tx, {
      tenantId: bound.tenantId,
      action: 'install',
      keyId: null,
      requestId: null,
      target: `install/${created.install_id}`,
      outcome: 'ok',
    });
    return created;
  }).catch((err: unknown) => {
    // Never revoke the loser's token: Slack hands one bot token per app and workspace, the winner's.
    if (err instanceof Conflict)
      deps.log.info(
        { teamId: a.team.id, tenantId: bound.tenantId },
        'chat install refused: workspace already installed',
      );
    throw err;
  });

  const log = deps.log.child({ installId: install.install_id, tenantId: install.tenant_id, teamId: a.team.id });
  if (missingGroupDmHistory(scopes)) {
    // spec §6.1 rule 2: group DMs drop out of backfill; say so once, at install time.
    log.warn(
      'chat install lacks the mpim:history scope: group DMs are left out of backfill; reinstall ' +
        'with it to include them',
    );
  }
  log.info({ rotation: Boolean(secret.expires_at) }, 'chat workspace installed');
  await deps
    .startBackfill(install.install_id)
    .catch((err: unknown) => log.warn({ err }, 'backfill not started now; a shard resume will start it'));
  return {
    install_id: install.install_id,
    connector_id: 'chatapp',
    status: 'active',
    team_id: a.team.id,
    team_name: a.team.name ?? null,
  };
}
