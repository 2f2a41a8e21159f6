/**
 * The fake Slack's token exchange, `oauth.v2.access` (slack-methods.ts routes it here): a
 * code from the authorize step (slack-authorize.ts) or, with token rotation, a refresh token
 * becomes a bot token. Slack keeps one bot token per app and workspace, so a reinstall gets
 * the live one back; a rotating team gets a fresh expiring token and refresh token each time.
 */
import { randomBytes } from 'node:crypto';
import { fail, ok, type Answer, type FakeSlackWorld, type FakeTeam, type Params } from './slack-model.js';

export function oauthAccess(
  fake: FakeSlackWorld,
  params: Params,
  basic: { id: string; secret: string } | null,
): Answer {
  const clientId = basic?.id ?? params.client_id;
  const clientSecret = basic?.secret ?? params.client_secret;
  if (clientId !== fake.clientId) return fail('invalid_client_id');
  if (clientSecret !== fake.clientSecret) return fail('bad_client_secret');
  if (params.grant_type === 'refresh_token') {
    const teamId = fake.refreshTokens.get(params.refresh_token ?? '');
    if (!teamId) return fail('invalid_refresh_token');
    fake.refreshTokens.delete(params.refresh_token!);
    fake.refreshes.push({ teamId, at: Date.now() });
    const old = [...fake.tokens.values()].find((t) => t.teamId === teamId && t.kind === 'bot' && !t.revoked);
    return ok(grant(fake, fake.team(teamId), old?.scopes ?? []));
  }
  const code = fake.codes.get(params.code ?? '');
  if (!code) return fail('invalid_code');
  fake.codes.delete(params.code!);
  if (code.redirectUri !== params.redirect_uri) return fail('bad_redirect_uri');
  return ok(grant(fake, fake.team(code.teamId), code.scopes));
}

/** A bot token for the team: Slack keeps one per app and workspace, so a reinstall gets the live one back. */
function grant(fake: FakeSlackWorld, team: FakeTeam, scopes: string[]): Record<string, unknown> {
  const rotating = team.rotationExpiresInS !== undefined;
  let token = rotating
    ? undefined
    : [...fake.tokens.values()].find((t) => t.teamId === team.id && t.kind === 'bot' && !t.revoked);
  if (!token) {
    const value = `${rotating ? 'xoxe.' : ''}xoxb-${team.id}-${randomBytes(8).toString('hex')}`;
    token = { token: value, kind: 'bot', teamId: team.id, scopes, revoked: false };
    if (rotating) token.expiresAt = Date.now() + team.rotationExpiresInS! * 1000;
    fake.tokens.set(value, token);
  }
  token.scopes = scopes;
  const answer: Record<string, unknown> = {
    app_id: fake.appId,
    authed_user: { id: 'U0INSTALLER' },
    scope: scopes.join(','),
    token_type: 'bot',
    access_token: token.token,
    bot_user_id: team.botUserId,
    team: { id: team.id, name: team.name },
    enterprise: null,
    is_enterprise_install: false,
  };
  if (rotating) {
    const refresh = `xoxe-1-${randomBytes(8).toString('hex')}`;
    fake.refreshTokens.set(refresh, team.id);
    answer.refresh_token = refresh;
    answer.expires_in = team.rotationExpiresInS;
  }
  return answer;
}
