/** The fake Slack speaks Slack's wire formats (the integration tests rely on it doing so). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from 'connector-service/testing';

let slack: FakeSlack;
let token: string;
let teamId: string;
beforeAll(async () => {
  slack = await new FakeSlack().start();
  const team = slack.addTeam({ scopes: ['chat:write', 'channels:read', 'channels:history'] });
  teamId = team.id;
  for (let i = 0; i < 5; i++) slack.addChannel(team.id, { name: `c${i}` });
  slack.setConsent(team.id);
  const redirect = 'https://installer.example/cb';
  const auth = await fetch(
    `${slack.authorizeUrl}?client_id=${slack.clientId}&scope=chat:write&redirect_uri=${encodeURIComponent(redirect)}&state=s1`,
    { redirect: 'manual' },
  );
  const code = new URL(auth.headers.get('location')!).searchParams.get('code')!;
  // OAuth client auth by HTTP Basic, as Slack also accepts.
  const res = await fetch(`${slack.apiUrl}oauth.v2.access`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${slack.clientId}:${slack.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ code, redirect_uri: redirect }),
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(() => slack.close());

const call = async (method: string, init: RequestInit) => {
  const res = await fetch(`${slack.apiUrl}${method}`, { method: 'POST', ...init });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
};

describe('fake Slack', () => {
  it('takes JSON bodies with a Bearer token and form bodies with a token parameter', async () => {
    const channel = [...slack.team(teamId).channels.keys()][0]!;
    const viaJson = await call('chat.postMessage', {
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ channel, text: 'json' }),
    });
    expect(viaJson.body).toMatchObject({ ok: true, channel, ts: expect.any(String) });
    const viaForm = await call('auth.test', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
    });
    expect(viaForm.body).toMatchObject({ ok: true, team_id: teamId });
    expect((await call('auth.test', {})).body).toEqual({ ok: false, error: 'not_authed' });
  });

  it('answers missing_scope with needed/provided, pages with next_cursor, and 429s with Retry-After', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' };
    const denied = await call('conversations.list', { headers, body: new URLSearchParams({ types: 'im' }) });
    expect(denied.body).toMatchObject({ ok: false, error: 'missing_scope', needed: 'im:read' });
    const first = await call('conversations.list', { headers, body: new URLSearchParams({ limit: '3' }) });
    expect(first.body.channels).toHaveLength(3);
    const second = await call('conversations.list', {
      headers,
      body: new URLSearchParams({ limit: '3', cursor: first.body.response_metadata.next_cursor }),
    });
    expect(second.body.channels).toHaveLength(2);
    expect(second.body.response_metadata.next_cursor).toBe('');
    slack.rateLimit('conversations.list', 7);
    const limited = await call('conversations.list', { headers, body: new URLSearchParams({}) });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
  });
});
