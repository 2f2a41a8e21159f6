/**
 * The chat install in a real browser (INTERFACE §10.7; issue 34): Chromium follows the
 * `authorize_url` of `oauth/start` to the fake Slack's consent page, presses Allow or Cancel,
 * and lands where the service sends it: its own success or failure page, or the tenant's
 * `success_url` / `failure_url` (a local server here) with `install_id` or `error`. The pages
 * render under their CSP with nothing refused (a refused style is a console error).
 * Screenshots of each step are kept in test-artifacts/.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { launchBrowser, type TestBrowser } from '../support/browser.js';

let s: ChatStack;
let b: TestBrowser;
let app: Server;
let appUrl: string;
/** Requests the tenant's own app received (path and query). */
const landed: string[] = [];

beforeAll(async () => {
  [s, b] = await Promise.all([startChatStack(), launchBrowser()]);
  app = createServer((req, res) => {
    landed.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html lang="en"><title>Tenant app</title><h1>Back in the app</h1></html>');
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await b?.close();
  app?.closeAllConnections();
  await new Promise((r) => app?.close(r));
  await s?.stop();
});

async function authorizeUrl(tenant: Tenant, extra: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${s.node.url}/api/v1/connectors/chatapp/oauth/start`, {
    method: 'POST',
    headers: { ...tenant.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uri: `${s.node.url}/api/v1/connectors/oauth/callback`, ...extra }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { authorize_url: string }).authorize_url;
}

/** Opens the consent page and presses `button` (#allow or #cancel); resolves where the browser ends up. */
async function consentAndPress(page: Page, url: string, button: '#allow' | '#cancel', shot: string): Promise<void> {
  await page.goto(url, { waitUntil: 'load' });
  expect(await page.title()).toMatch(/^Install app to .+ \| Slack$/);
  await b.screenshot(page, `${shot}-consent`);
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(button)]);
}

/** The install the browser was told of exists, active, for the tenant that started it. */
async function expectActiveInstall(tenant: Tenant, installId: string, teamId: string): Promise<void> {
  const res = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth });
  expect(await json(res)).toMatchObject({ install_id: installId, external_id: teamId, status: 'active' });
}

const text = (page: Page, selector: string) => page.$eval(selector, (el) => el.textContent?.trim() ?? '');

describe('the chat install in a browser', () => {
  it('walks oauth/start → consent → Allow → the success page', async () => {
    const team = s.slack.addTeam({ name: 'Browser Workspace' });
    s.slack.setConsent(team.id);
    const tenant = await s.node.tenant();
    const page = await b.newPage();
    await consentAndPress(page, await authorizeUrl(tenant), '#allow', 'oauth-success');
    expect(new URL(page.url()).pathname).toBe('/api/v1/connectors/oauth/callback');
    expect(await page.title()).toBe('Workspace connected');
    expect(await text(page, 'h1')).toBe('Workspace connected');
    expect(await page.$eval('html', (el) => el.lang)).toBe('en');
    const body = await text(page, 'main');
    expect(body).toContain('Browser Workspace');
    expect(body).toContain(team.id);
    // The hashed stylesheet applied (the CSP let it through): the heading has its colour.
    expect(await page.evaluate("getComputedStyle(document.querySelector('h1')).color")).toBe('rgb(17, 99, 41)');
    await b.screenshot(page, 'oauth-success-page');

    const installId = /Install id\s*([0-9a-f-]{36})/.exec(body)![1]!;
    await expectActiveInstall(tenant, installId, team.id);
    await page.close();
    expect(b.problems).toEqual([]);
  });

  it("lands on the tenant's success_url with install_id", async () => {
    const team = s.slack.addTeam({ name: 'Redirect Workspace' });
    s.slack.setConsent(team.id);
    const tenant = await s.node.tenant();
    const page = await b.newPage();
    const url = await authorizeUrl(tenant, {
      success_url: `${appUrl}/settings/slack?tab=installs`,
      failure_url: `${appUrl}/settings/slack/failed`,
    });
    await consentAndPress(page, url, '#allow', 'oauth-success-url');
    const at = new URL(page.url());
    expect(`${at.origin}${at.pathname}`).toBe(`${appUrl}/settings/slack`);
    expect(at.searchParams.get('tab')).toBe('installs');
    const installId = at.searchParams.get('install_id')!;
    expect(landed).toContain(`/settings/slack?tab=installs&install_id=${installId}`);
    expect(await text(page, 'h1')).toBe('Back in the app');
    await b.screenshot(page, 'oauth-success-url-landed');
    await expectActiveInstall(tenant, installId, team.id);
    await page.close();
    expect(b.problems).toEqual([]);
  });

  it('Cancel on the consent page ends on the failure page, or on failure_url with error=access_denied', async () => {
    const team = s.slack.addTeam({ name: 'Declining Workspace' });
    s.slack.setConsent(team.id);
    const tenant = await s.node.tenant();

    const page = await b.newPage();
    await consentAndPress(page, await authorizeUrl(tenant), '#cancel', 'oauth-cancel');
    expect(await page.title()).toBe('Install failed');
    expect(await text(page, 'h1')).toBe('The install did not complete');
    expect(await text(page, 'main')).toContain('access_denied');
    await b.screenshot(page, 'oauth-failure-page');

    const url = await authorizeUrl(tenant, { failure_url: `${appUrl}/settings/slack/failed?x=1` });
    await consentAndPress(page, url, '#cancel', 'oauth-failure-url');
    expect(page.url()).toBe(`${appUrl}/settings/slack/failed?x=1&error=access_denied`);
    expect(landed).toContain('/settings/slack/failed?x=1&error=access_denied');
    await page.close();
    expect(b.problems).toEqual([]);
    // Nothing was installed for this tenant.
    const installs = await json(await fetch(`${s.node.url}/api/v1/connectors/installs`, { headers: tenant.auth }));
    expect(installs.installs).toEqual([]);
  });
});
