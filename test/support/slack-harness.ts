/**
 * A real node wired to a fake Slack, and the installer's browser walk through OAuth
 * (start → authorize redirect → callback), for the chatapp integration tests.
 */
import { expect } from 'vitest';
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import { startCodehostHarness, type CodehostHarness } from './github-harness.js';
import type { LogCapture } from './log-capture.js';
import { startTestNode, type TestNode } from './node.js';
import { FakeSlack } from 'connector-service/testing';

export interface ChatStack {
  slack: FakeSlack;
  node: TestNode;
  stop(): Promise<void>;
}

export function chatEnv(slack: FakeSlack, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CHATAPP_CLIENT_ID: slack.clientId,
    CHATAPP_CLIENT_SECRET: slack.clientSecret,
    CHATAPP_SIGNING_SECRET: slack.signingSecret,
    CHATAPP_API_URL: slack.apiUrl,
    CHATAPP_AUTHORIZE_URL: slack.authorizeUrl,
    // 1 request per minute becomes one per 60 ms: same shape, test speed.
    CHATAPP_BACKFILL_PACING_DIVISOR: '1000',
    ...extra,
  };
}

export async function startChatStack(
  extra: Record<string, string> = {},
  slack?: FakeSlack,
  opts: { logs?: LogCapture } = {},
): Promise<ChatStack> {
  const fake = slack ?? (await new FakeSlack().start());
  const node = await startTestNode(chatEnv(fake, extra), undefined, opts);
  fake.eventsUrl = `${node.url}${EVENTS_PATH}`;
  return {
    slack: fake,
    node,
    async stop() {
      await node.stop();
      await fake.close();
    },
  };
}

export type Tenant = Awaited<ReturnType<TestNode['tenant']>>;

/** POST oauth/start; returns the parsed answer. */
export async function oauthStart(url: string, tenant: Tenant, redirectUri = `${url}/api/v1/connectors/oauth/callback`) {
  const res = await fetch(`${url}/api/v1/connectors/chatapp/oauth/start`, {
    method: 'POST',
    headers: { ...tenant.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uri: redirectUri }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { authorize_url: string; state: string; expires_at: string };
}

/** The browser: follow authorize_url to the fake's consent redirect; returns the callback URL it lands on. */
export async function consent(authorizeUrl: string): Promise<string> {
  const res = await fetch(authorizeUrl, { redirect: 'manual' });
  expect(res.status).toBe(302);
  return res.headers.get('location')!;
}

/** The whole install for `teamId`; returns the callback's response. */
export async function install(stack: ChatStack, tenant: Tenant, teamId: string): Promise<Response> {
  stack.slack.setConsent(teamId);
  const start = await oauthStart(stack.node.url, tenant);
  return fetch(await consent(start.authorize_url));
}

export async function installOk(
  stack: ChatStack,
  tenant: Tenant,
  teamId: string,
): Promise<{ install_id: string; team_id: string }> {
  const res = await install(stack, tenant, teamId);
  const body = (await res.json()) as { install_id: string; team_id: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

export interface ListedEvent {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
  occurred_at: string | null;
}

/** Every event of the install's log (all pages). */
export async function allEvents(url: string, tenant: Tenant, installId: string): Promise<ListedEvent[]> {
  const out: ListedEvent[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${cursor}` : '';
    const res = await fetch(`${url}/api/v1/connectors/installs/${installId}/events?limit=500${q}`, {
      headers: tenant.auth,
    });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { events: ListedEvent[]; next_cursor: string | null };
    out.push(...page.events);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

export async function emit(
  url: string,
  tenant: Tenant,
  installId: string,
  kind: string,
  body: Record<string, unknown>,
): Promise<Response> {
  return fetch(`${url}/api/v1/connectors/installs/${installId}/emit`, {
    method: 'POST',
    headers: { ...tenant.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ kind, body }),
  });
}

/** A response body as JSON, untyped for assertions (fetch types it `unknown`). */
export const json = (r: Response): Promise<any> => r.json();

/**
 * One node with both connectors: the code-host harness (its fake GitHub) with a fake Slack's
 * settings, Slack's events pointed at it. `s` is the chat side's view of the same node.
 */
export async function startBothConnectors(): Promise<{ h: CodehostHarness; s: ChatStack }> {
  const slack = await new FakeSlack().start();
  const h = await startCodehostHarness(chatEnv(slack));
  slack.eventsUrl = `${h.node.url}${EVENTS_PATH}`;
  const s: ChatStack = {
    slack,
    node: h.node,
    async stop() {
      await h.stop();
      await slack.close();
    },
  };
  return { h, s };
}
