/**
 * The chat OAuth callback for a browser (INTERFACE §10.7): with `Accept: text/html` it answers
 * an escaped page under a strict CSP, or a 303 to the `success_url` / `failure_url` bound to
 * the state at `oauth/start`; a bad state has no trusted URL, so a page; without `Accept:
 * text/html` the answers stay §3's JSON.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consent, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';

/** What Chromium sends on a navigation. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

let s: ChatStack;
beforeAll(async () => {
  s = await startChatStack();
});
afterAll(() => s?.stop());

async function start(tenant: Tenant, extra: Record<string, unknown>): Promise<Response> {
  return fetch(`${s.node.url}/api/v1/connectors/chatapp/oauth/start`, {
    method: 'POST',
    headers: { ...tenant.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uri: `${s.node.url}/api/v1/connectors/oauth/callback`, ...extra }),
  });
}

/** oauth/start, consent on the fake, then the callback as a browser would load it. */
async function browserInstall(
  tenant: Tenant,
  teamId: string,
  extra: Record<string, unknown> = {},
  opts: { deny?: boolean; accept?: string } = {},
): Promise<Response> {
  s.slack.setConsent(teamId, { deny: opts.deny });
  const started = await start(tenant, extra);
  expect(started.status).toBe(200);
  const callback = await consent(((await started.json()) as { authorize_url: string }).authorize_url);
  return fetch(callback, { headers: { accept: opts.accept ?? BROWSER_ACCEPT }, redirect: 'manual' });
}

function expectSafePage(res: Response, html: string): void {
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  const csp = res.headers.get('content-security-policy')!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toMatch(/script-src/);
  // The only inline style is the one the policy names by hash; there is no script at all.
  const style = /<style>([^<]*)<\/style>/.exec(html)![1]!;
  expect(csp).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);
  expect(html).not.toMatch(/<script|<[^>]*\son\w+=/i);
  expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
  expect(html).toMatch(/<title>[^<]+<\/title>/);
  expect(html).toMatch(/<h1[^>]*>[^<]+<\/h1>/);
}

describe('oauth/start return URLs', () => {
  it('takes absolute http(s) success_url and failure_url, and refuses anything else with bad_request', async () => {
    const tenant = await s.node.tenant();
    for (const bad of ['/done', 'javascript:alert(1)', 'ftp://app.example/x', '', 42, null]) {
      for (const field of ['success_url', 'failure_url']) {
        const res = await start(tenant, { [field]: bad });
        expect(res.status, `${field}=${String(bad)}`).toBe(400);
        expect((await json(res)).error.code).toBe('bad_request');
      }
    }
    const ok = await start(tenant, { success_url: 'https://app.example/ok', failure_url: 'http://127.0.0.1:1/no' });
    expect(ok.status).toBe(200);
    expect(Object.keys(await json(ok)).sort()).toEqual(['authorize_url', 'expires_at', 'state']);
  });
});

describe('oauth/callback for a browser', () => {
  it('answers an escaped page saying what was installed', async () => {
    const team = s.slack.addTeam({ name: '<img src=x onerror=alert(1)> & Co' });
    const tenant = await s.node.tenant();
    const res = await browserInstall(tenant, team.id);
    const html = await res.text();
    expect(res.status).toBe(200);
    expectSafePage(res, html);
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp; Co');
    expect(html).not.toContain('<img');
    const installId = /<dt>Install id<\/dt><dd><code>([0-9a-f-]{36})<\/code>/.exec(html)![1]!;
    expect(html).toContain(team.id);
    // The install the page names exists, for the tenant that started it.
    const install = await json(
      await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth }),
    );
    expect(install).toMatchObject({ install_id: installId, external_id: team.id, status: 'active' });
  });

  it('redirects (303) to success_url with install_id added to its own query, keeping its fragment', async () => {
    const team = s.slack.addTeam({ name: 'Redirected' });
    const tenant = await s.node.tenant();
    const res = await browserInstall(tenant, team.id, {
      success_url: 'https://app.example/slack/done?from=slack&note=a%20b#top',
      failure_url: 'https://app.example/slack/failed',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe('https://app.example/slack/done');
    expect(location.search).toMatch(/^\?from=slack&note=a%20b&install_id=[0-9a-f-]{36}$/);
    expect(location.hash).toBe('#top');
    const installId = location.searchParams.get('install_id')!;
    const install = await json(
      await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth }),
    );
    expect(install).toMatchObject({ install_id: installId, external_id: team.id, status: 'active' });
  });

  it('redirects a declined install to failure_url with error=access_denied', async () => {
    const team = s.slack.addTeam({ name: 'Declined' });
    const res = await browserInstall(
      await s.node.tenant(),
      team.id,
      { success_url: 'https://app.example/ok', failure_url: 'https://app.example/failed?tenant=7' },
      { deny: true },
    );
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('https://app.example/failed?tenant=7&error=access_denied');
  });

  it('redirects a workspace another tenant holds to failure_url with its §2 code', async () => {
    const team = s.slack.addTeam({ name: 'Claimed' });
    expect((await browserInstall(await s.node.tenant(), team.id)).status).toBe(200);
    const res = await browserInstall(await s.node.tenant(), team.id, { failure_url: 'https://app.example/f' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('https://app.example/f?error=workspace_already_installed');
  });

  it('a failure without failure_url is a page naming the code; a bad state is a page, never a redirect', async () => {
    const team = s.slack.addTeam({ name: 'Declined page' });
    const denied = await browserInstall(await s.node.tenant(), team.id, {}, { deny: true });
    const deniedHtml = await denied.text();
    expect(denied.status).toBe(400);
    expectSafePage(denied, deniedHtml);
    expect(deniedHtml).toContain('<code>access_denied</code>');

    const forged = await fetch(`${s.node.url}/api/v1/connectors/oauth/callback?code=x&state=forged`, {
      headers: { accept: BROWSER_ACCEPT, 'x-request-id': 'page-test-1' },
      redirect: 'manual',
    });
    const html = await forged.text();
    expect(forged.status).toBe(400);
    expect(forged.headers.get('location')).toBeNull();
    expectSafePage(forged, html);
    expect(html).toContain('<code>invalid_state</code>');
    expect(html).toContain('<code>page-test-1</code>');
    expect(html).not.toContain('forged');
  });

  it('answers JSON exactly as §3 when the caller does not ask for HTML, return URLs or not', async () => {
    const team = s.slack.addTeam({ name: 'Scripted' });
    for (const accept of ['*/*', 'application/json']) {
      const res = await browserInstall(
        await s.node.tenant(),
        team.id,
        { success_url: 'https://app.example/ok', failure_url: 'https://app.example/failed' },
        { accept, deny: true },
      );
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect((await json(res)).error.code).toBe('access_denied');
    }
    const ok = await browserInstall(
      await s.node.tenant(),
      team.id,
      { success_url: 'https://app.example/ok' },
      {
        accept: 'application/json',
      },
    );
    expect(ok.status).toBe(200);
    expect(await json(ok)).toEqual({
      install_id: expect.any(String),
      connector_id: 'chatapp',
      status: 'active',
      team_id: team.id,
      team_name: 'Scripted',
    });
  });
});
