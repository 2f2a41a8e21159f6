/**
 * The fake Slack's OAuth authorize step (slack-fake.ts), as Slack's `/oauth/v2/authorize`:
 * a browser gets a consent page for the workspace it is "signed in" to (`setConsent`) with
 * Allow and Cancel; its form posts back here and Slack's redirect follows: 302 to
 * `redirect_uri?code=…&state=…` on Allow, `?error=access_denied&state=…` on Cancel. A scripted
 * client (no `text/html` in Accept) gets that redirect at once, decided by `setConsent`.
 */
import { randomBytes } from 'node:crypto';
import esc from 'escape-html';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeTeam } from './slack-model.js';

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  state: string;
  scope: string;
}

export interface AuthorizeHost {
  readonly clientId: string;
  readonly codes: Map<string, { teamId: string; scopes: string[]; redirectUri: string }>;
  team(id: string): FakeTeam;
}

export function authorizeRequest(q: URLSearchParams): AuthorizeRequest | null {
  const clientId = q.get('client_id') ?? '';
  const redirectUri = q.get('redirect_uri') ?? '';
  if (!clientId || !/^https?:\/\//.test(redirectUri)) return null;
  return { clientId, redirectUri, state: q.get('state') ?? '', scope: q.get('scope') ?? '' };
}

export function wantsPage(req: IncomingMessage): boolean {
  return (req.headers.accept ?? '').includes('text/html');
}

/** Slack's redirect back to the app: a code for `teamId`, or `access_denied` when null. */
export function grant(host: AuthorizeHost, r: AuthorizeRequest, teamId: string | null, res: ServerResponse): void {
  const target = new URL(r.redirectUri);
  target.searchParams.set('state', r.state);
  if (teamId === null) {
    target.searchParams.set('error', 'access_denied');
  } else {
    const team = host.team(teamId);
    const scopes = team.grantScopes ?? r.scope.split(',').filter(Boolean);
    const code = randomBytes(12).toString('hex');
    host.codes.set(code, { teamId: team.id, scopes, redirectUri: r.redirectUri });
    target.searchParams.set('code', code);
  }
  res.writeHead(302, { location: target.toString() }).end();
}

/** The consent screen: which app, which workspace, which scopes; Allow or Cancel. */
export function consentPage(r: AuthorizeRequest, team: FakeTeam, res: ServerResponse): void {
  const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${esc(value)}">`;
  const scopes = r.scope
    .split(',')
    .filter(Boolean)
    .map((s) => `<li><code>${esc(s)}</code></li>`)
    .join('');
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Install app to ${esc(team.name)} | Slack</title></head>
<body>
<main>
<h1>The app is requesting permission to access the ${esc(team.name)} Slack workspace</h1>
<h2>What will it be able to do?</h2>
<ul>${scopes}</ul>
<form method="post" action="/oauth/v2/authorize">
${hidden('client_id', r.clientId)}${hidden('redirect_uri', r.redirectUri)}${hidden('state', r.state)}${hidden('scope', r.scope)}
<button type="submit" name="decision" value="deny" id="cancel">Cancel</button>
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
</form>
</main>
</body>
</html>`;
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
}
