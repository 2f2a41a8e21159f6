/**
 * The tenant console in a real browser (INTERFACE §10.7; issue 34): Chromium, under the
 * console's own CSP, against a real node with the sandbox's fake Slack and GitHub (seeded
 * history, both connectors installed through the public API, as `dev --sandbox` does). Each
 * page renders the service's data; a dead letter is replayed from the page; a graph search
 * finds a message and its edges; a key that lacks a scope, and a service without a route,
 * get a sentence saying so. Every page passes axe-core with no serious or critical finding,
 * the keyboard reaches the controls in order, and focus lands on the new page's heading.
 * A screenshot of each page is kept in test-artifacts/.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ElementHandle, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_INSTALLATION, startSandbox, type Sandbox } from '../../src/dev/sandbox.js';
import { encodeIngestMessage, ingestMsgId } from '../../src/ingest/message.js';
import { installKey, names, shardOf } from '../../src/runtime/names.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import { createUser } from '../../src/store/users.js';
import { examplePayload, forInstallation } from '../support/github-harness.js';
import { launchBrowser, type TestBrowser } from '../support/browser.js';
import { axeViolations, focused, startRefusingProxy, tabThrough } from '../support/console-browser.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

/**
 * The page's globals, for the callbacks puppeteer runs in the browser: this file is compiled
 * for Node (no DOM library), so they are declared here, loosely, for this module only.
 */
declare const document: any, sessionStorage: any, localStorage: any;

let sandbox: Sandbox;
let node: TestNode;
let b: TestBrowser;
let page: Page;
let tenant: Awaited<ReturnType<TestNode['tenant']>>;
let chat: string;
let code: string;

const api = async (path: string, init: { method?: string; body?: unknown } = {}): Promise<any> => {
  const res = await fetch(`${node.url}/api/v1/${path}`, {
    method: init.method ?? 'GET',
    headers: { ...tenant.auth, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
};

let issues = 0;
/** A dead letter of the code-host install: an `issues.opened` (of a new issue each time) that could not be stored. */
async function deadLetter(): Promise<{ id: string; eventId: string }> {
  const n = names(node.namespace);
  const payload = forInstallation(examplePayload('issues', 'opened'), SANDBOX_INSTALLATION);
  const issue = payload.issue as Record<string, unknown>;
  Object.assign(issue, {
    number: 9000 + ++issues,
    title: `Console issue ${issues}`,
    updated_at: new Date().toISOString(),
  });
  const event = {
    installId: code,
    tenantId: tenant.tenant_id,
    connectorId: 'codehost',
    id: randomUUID(),
    kind: 'issues.opened',
    occurredAt: null,
    payload,
  };
  const id = await recordDeadLetter(node.pool, {
    stream: n.ingestStream,
    streamSeq: 1,
    subject: n.ingestSubject(shardOf(installKey(code), node.config.shards), 'codehost', code),
    msgId: ingestMsgId(code, event.id),
    installId: code,
    deliveries: 8,
    error: 'relation "graph_nodes" is locked',
    payload: encodeIngestMessage(event),
  });
  return { id, eventId: event.id };
}

beforeAll(async () => {
  sandbox = await startSandbox();
  [node, b] = await Promise.all([
    startTestNode({ ...sandbox.env, SERVICE_WEBHOOKS_ALLOW_HTTP: '1', SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1' }),
    launchBrowser(),
  ]);
  tenant = await node.tenant('console');
  const user = await createUser(node.pool, tenant.tenant_id, 'console@example.com');
  ({ chatapp_install_id: chat, codehost_install_id: code } = await sandbox.install(
    node.url,
    tenant.api_key,
    user.user_id,
  ));
  let installs: unknown = null;
  await until(
    'both backfills complete',
    async () => {
      installs = (await api('connectors/installs')).body.installs;
      return (installs as any[]).every((i) => i.backfill.state === 'complete');
    },
    { timeoutMs: 60_000 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(installs)}`);
  });
  // The thread's parent with its two replies and its channel: what the edges test reads.
  await until(
    'the release message with its replies in the graph',
    async () => {
      const found = (await api('graph/nodes?q=release')).body.nodes[0];
      return found && (await api(`graph/nodes/${found.id}`)).body.edges.length >= 4;
    },
    { timeoutMs: 60_000 },
  );
  page = await b.newPage();
  await page.setViewport({ width: 1200, height: 800 });
}, 180_000);

afterAll(async () => {
  await b?.close();
  await node?.stop();
  await sandbox?.stop();
});

const mainText = (p: Page) => p.$eval('main', (el) => el.textContent ?? '');

/** Waits until `<main>` shows `text` and no call is in flight. */
async function shows(p: Page, text: string): Promise<void> {
  await p.waitForFunction(
    (t) => document.querySelector('main')?.textContent?.includes(t) && !document.querySelector('[aria-busy]'),
    { timeout: 20_000 },
    text,
  );
}

/** Clicks the link or button whose text is exactly `text` (inside `scope`). */
async function press(p: Page, text: string, scope = 'body'): Promise<void> {
  const handle = await p.waitForFunction(
    (s, t) => [...document.querySelectorAll(`${s} a, ${s} button`)].find((el) => el.textContent?.trim() === t) ?? null,
    { timeout: 20_000 },
    scope,
    text,
  );
  const el = handle.asElement();
  if (el === null) throw new Error(`no link or button "${text}" in ${scope}`);
  await (el as ElementHandle).click();
}

async function expectAccessible(p: Page, name: string): Promise<void> {
  expect(await axeViolations(p, name)).toEqual([]);
  await b.screenshot(p, name);
  expect(b.problems).toEqual([]);
}

const storedKey = (p: Page) => p.evaluate(() => Object.values(sessionStorage));

describe('the console in a browser', () => {
  it('asks for the key in a labelled form, refuses an unknown key, keeps a good one in session storage', async () => {
    await page.goto(`${node.url}/console`, { waitUntil: 'load' });
    await shows(page, 'Connect with an API key');
    expect(await page.$eval('label[for="api-key"]', (el) => el.textContent)).toBe('Tenant API key');
    expect(await focused(page)).toBe('input#api-key');
    // Before the field, only the skip link; after it, the button.
    await page.keyboard.down('Shift');
    await page.keyboard.press('Tab');
    await page.keyboard.up('Shift');
    expect(await focused(page)).toBe('a "Skip to content"');
    expect(await tabThrough(page, 2)).toEqual(['input#api-key', 'button "Use this key"']);
    await expectAccessible(page, 'console-key-form');

    await page.focus('#api-key');
    await page.keyboard.type('csk_not_a_key_of_this_service');
    await page.keyboard.press('Enter');
    await shows(page, 'The service does not know this key.');
    expect(await page.$eval('#api-key', (el) => el.getAttribute('aria-invalid'))).toBe('true');
    expect(await focused(page)).toBe('input#api-key');
    expect(await storedKey(page)).toEqual([]);

    await page.$eval('#api-key', (el) => (el.value = ''));
    await page.keyboard.type(tenant.api_key);
    await page.keyboard.press('Enter');
    await shows(page, code);
    expect(await storedKey(page)).toEqual([tenant.api_key]);
    expect(page.url()).not.toContain(tenant.api_key);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
  });

  it('installs: each with its status and backfill; focus on the heading, then the table and its links', async () => {
    expect(await focused(page)).toBe('h1 "Installs"');
    const text = await mainText(page);
    for (const s of [chat, code, 'Sandbox', 'sandbox-org', 'Chat (Slack)', 'Code host (GitHub)', 'complete']) {
      expect(text).toContain(s);
    }
    expect(await page.$$eval('th[scope="col"]', (ths) => ths.map((th) => th.textContent))).toEqual([
      'Install',
      'Connector',
      'Status',
      'Backfill',
      'Catch-up',
      'Created',
    ]);
    // The scrollable table is a stop of its own, then its links, newest install first.
    expect(await tabThrough(page, 3)).toEqual(['div "2 installs, newest first"', 'a "sandbox-org"', 'a "Sandbox"']);
    expect(await page.$eval('nav a[aria-current="page"]', (a) => a.textContent)).toBe('Installs');
    await expectAccessible(page, 'console-installs');
  });

  it("an install: its backfill's progress, catch-up and side effects", async () => {
    await press(page, 'Sandbox', 'main');
    await shows(page, 'Side effects');
    expect(await focused(page)).toBe('h1 "Install: Sandbox"');
    const text = await mainText(page);
    for (const s of [chat, 'T0SANDBOX', 'Backfill', 'complete', 'Messages', 'Catch-up', 'Pending', 'Last error']) {
      expect(text).toContain(s);
    }
    await expectAccessible(page, 'console-install');
  });

  it("an install's recent events, filtered by kind from the keyboard", async () => {
    const events = (await api(`connectors/installs/${chat}/events?limit=50`)).body.events as any[];
    await press(page, 'Recent events', 'main');
    await shows(page, 'Events, newest first');
    const text = await mainText(page);
    for (const e of events.slice(0, 5)) expect(text).toContain(e.id);
    expect(text).toContain('Release 1.4 goes out today');
    await expectAccessible(page, 'console-events');

    await page.focus('#events-kind');
    await page.keyboard.type('channel_info');
    await page.keyboard.press('Enter');
    await shows(page, 'Events of kind channel_info');
    const kinds = await page.$$eval('tbody tr td:nth-child(2)', (tds) => [...new Set(tds.map((td) => td.textContent))]);
    expect(kinds).toEqual(['channel_info']);
    expect(page.url()).toMatch(/#\/installs\/[0-9a-f-]+\/events\?kind=channel_info$/);
  });

  it('dead letters: Replay on the page puts the event back on the ingest path', async () => {
    const dl = await deadLetter();
    await press(page, 'Dead letters', 'nav');
    await shows(page, dl.eventId);
    expect(await focused(page)).toBe('h1 "Dead letters"');
    expect(await mainText(page)).toContain('relation "graph_nodes" is locked');
    await expectAccessible(page, 'console-dead-letters');

    await press(page, `Replay dead letter ${dl.id}`, 'main');
    await shows(page, 'Replayed');
    expect(await focused(page)).toBe('span "Replayed"');
    expect(b.problems).toEqual([]);
    await b.screenshot(page, 'console-dead-letter-replayed');
    expect((await api('dead-letters')).body.dead_letters.map((d: any) => d.id)).not.toContain(dl.id);
    await until(
      'the replayed event in the install’s events',
      async () =>
        (await api(`connectors/installs/${code}/events?limit=500`)).body.events.some((e: any) => e.id === dl.eventId),
      { timeoutMs: 20_000 },
    );
  });

  it('graph: a search finds the message; its page shows its edges and the nodes at their other ends', async () => {
    await press(page, 'Graph', 'nav');
    await shows(page, 'Nodes, newest first');
    expect(await focused(page)).toBe('h1 "Graph"');
    expect(await tabThrough(page, 3)).toEqual(['input#graph-q', 'select#graph-kind', 'button "Search"']);
    await page.focus('#graph-q');
    await page.keyboard.type('release');
    await page.keyboard.press('Enter');
    await shows(page, 'Nodes matching “release”');
    expect(await page.$$eval('tbody tr', (rows) => rows.length)).toBe(1);
    expect(await mainText(page)).toContain('Release 1.4 goes out today: anything blocking?');
    await expectAccessible(page, 'console-graph-search');

    await press(page, 'Release 1.4 goes out today: anything blocking?', 'main');
    await shows(page, 'Each edge, its direction and the node at its other end');
    expect(await focused(page)).toBe('h1 "chat.message: Release 1.4 goes out today: anything blocking?"');
    const edges = await page.$$eval('section[aria-labelledby="edges-heading"] tbody tr', (rows) =>
      rows.map((r) => [...r.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent?.trim())),
    );
    expect(edges).toEqual(
      expect.arrayContaining([
        ['reply_to', 'incoming', 'The migration is reviewed, good to go. chat.message'],
        ['reply_to', 'incoming', 'Docs are updated too. chat.message'],
        ['in_channel', 'outgoing', 'general chat.channel'],
      ]),
    );
    expect(edges.some(([type, dir]) => type === 'authored_by' && dir === 'outgoing')).toBe(true);
    await expectAccessible(page, 'console-graph-node');
  });

  it('webhooks: the page lists them and a webhook its deliveries, or says the service has no such route', async () => {
    const listed = await api('webhooks');
    if (listed.status === 404) {
      // INTERFACE §10.2 not in this build: the page says so, and nothing else breaks.
      await press(page, 'Webhooks', 'nav');
      await shows(page, 'This service does not offer webhooks');
      expect(await mainText(page)).toContain('404 not_found');
      await expectAccessible(page, 'console-webhooks');
      return;
    }
    expect(listed.status).toBe(200);
    const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/graph`;
      const created = await api('webhooks', { method: 'POST', body: { url, description: 'console test' } });
      expect(created.status).toBe(201);
      // A change to deliver: a replayed dead letter puts an issue into the graph.
      const dl = await deadLetter();
      expect((await api(`dead-letters/${dl.id}/replay`, { method: 'POST' })).status).toBe(200);
      await until(
        'a delivery of the change',
        async () => (await api(`webhooks/${created.body.id}/deliveries`)).body.deliveries.length > 0,
        { timeoutMs: 20_000 },
      );
      await press(page, 'Webhooks', 'nav');
      await shows(page, url);
      expect(await mainText(page)).toContain('console test');
      await expectAccessible(page, 'console-webhooks');
      await press(page, url, 'main');
      await shows(page, 'Delivery attempts, newest first');
      expect(await focused(page)).toBe(`h1 "Webhook: ${url}"`);
      const delivery = (await api(`webhooks/${created.body.id}/deliveries`)).body.deliveries.at(-1);
      const text = await mainText(page);
      expect(text).toContain(created.body.id);
      expect(text).toContain(delivery.message_id);
      expect(text).toContain('204');
      await expectAccessible(page, 'console-webhook-deliveries');
    } finally {
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  });

  it('the audit log: its entries, or says the service has no such route', async () => {
    const audit = await api('audit');
    await press(page, 'Audit log', 'nav');
    if (audit.status === 404) {
      // INTERFACE §10.5 not in this build.
      await shows(page, 'This service does not offer an audit log');
    } else {
      expect(audit.status).toBe(200);
      // The replay above is audited (INTERFACE §10.5).
      expect(audit.body.entries.length).toBeGreaterThan(0);
      await shows(page, 'Audit entries, newest first');
      const text = await mainText(page);
      for (const e of audit.body.entries.slice(0, 5)) expect(text).toContain(e.action);
    }
    await expectAccessible(page, 'console-audit');
  });

  it('the accessibility pass sees a violation when there is one: a field without a label', async () => {
    await page.evaluate(() => document.querySelector('main')!.append(document.createElement('input')));
    const found = await axeViolations(page, 'console-axe-sees-unlabelled-field');
    expect(found.map((f) => f.id)).toContain('label');
    await page.evaluate(() => document.querySelector('main > input')!.remove());
  });

  it('Forget key: the key leaves session storage and the form takes the focus', async () => {
    await press(page, 'Forget key', 'header');
    await shows(page, 'Connect with an API key');
    expect(await storedKey(page)).toEqual([]);
    expect(await focused(page)).toBe('input#api-key');
    expect(await page.$eval('#nav', (el) => el.hidden)).toBe(true);
  });
});

describe('refusals, shown as sentences', () => {
  it('a key without the scope of a page (403 forbidden), a route the service lacks (404), a refused replay', async () => {
    // What a key without `audit:read` and `installs:write`, and a build without webhooks,
    // answer (INTERFACE §10, §10.4): a proxy in front of the node answers those calls so.
    const proxy = await startRefusingProxy(node.url, (req) => {
      const path = (req.url ?? '').split('?')[0]!;
      if (path === '/api/v1/audit') {
        return { status: 403, code: 'forbidden', message: 'this API key lacks the scope audit:read' };
      }
      if (req.method === 'POST' && /^\/api\/v1\/dead-letters\/\d+\/replay$/.test(path)) {
        return { status: 403, code: 'forbidden', message: 'this API key lacks the scope installs:write' };
      }
      if (path === '/api/v1/webhooks') return { status: 404, code: 'not_found', message: `no route for GET ${path}` };
      return null;
    });
    const p = await b.newPage();
    try {
      await p.setViewport({ width: 1200, height: 800 });
      await p.goto(`${proxy.url}/console#/audit`, { waitUntil: 'load' });
      await p.focus('#api-key');
      await p.keyboard.type(tenant.api_key);
      await p.keyboard.press('Enter');
      await shows(p, 'This API key may not read the audit log');
      const audit = await mainText(p);
      expect(audit).toContain('it lacks the scope audit:read (403 forbidden)');
      expect(audit).toContain('refused-by-proxy');
      await expectAccessible(p, 'console-audit-forbidden');

      await press(p, 'Webhooks', 'nav');
      await shows(p, 'This service does not offer webhooks: GET /api/v1/webhooks answered 404 not_found.');
      await expectAccessible(p, 'console-webhooks-missing');

      const dl = await deadLetter();
      await press(p, 'Dead letters', 'nav');
      await shows(p, dl.eventId);
      await press(p, `Replay dead letter ${dl.id}`, 'main');
      await shows(p, 'This API key may not replay dead letters: it lacks the scope installs:write (403 forbidden).');
      expect(await focused(p)).toBe(`button "Replay dead letter ${dl.id}"`);
      // Still there, and the button is there to try again with another key.
      expect((await api('dead-letters')).body.dead_letters.map((d: any) => d.id)).toContain(dl.id);
      expect(await p.$eval('.replay button', (el) => el.disabled)).toBe(false);
      await expectAccessible(p, 'console-replay-forbidden');
    } finally {
      await p.close();
      await proxy.close();
    }
  });
});
