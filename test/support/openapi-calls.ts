/**
 * What the OpenAPI conformance test (openapi-conformance.test.ts) sends: the context its
 * setup fills, one call through the validating proxy, and builders for the calls the
 * tables make (emits, OAuth walks, signed Slack and GitHub deliveries, admin installs).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { eventEnvelope, messageEvent, nextTs, signedHeaders, type FakeSlack } from 'connector-service/testing';
import { sign, type CodehostHarness } from './github-harness.js';
import type { Exchange, ValidatingProxy } from './openapi-proxy.js';

export type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;

export interface Ctx {
  slack: FakeSlack;
  h: CodehostHarness;
  proxy: ValidatingProxy;
  a: Tenant;
  b: Tenant;
  team: string;
  /**
   * The workspace's channels: a channel takes one write a second (INTERFACE §3), so each
   * row that writes has its own. `channel`, the first, holds `ts`, a message the graph
   * gets from backfill; `reacted` holds `reactedTs`.
   */
  channel: string;
  ts: string;
  reacted: string;
  reactedTs: string;
  posted: string;
  keyed: string;
  throttled: string;
  chat: string;
  code: string;
  installation: number;
  node: string;
  deadLetter: string;
}

export interface Call {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Sent as is instead of `body`'s JSON. */
  raw?: string;
}

/** One call of the table and what it must answer. */
export interface Row {
  name: string;
  call: (c: Ctx) => Call | Promise<Call>;
  status: number;
  /** Whether the document accepts the request; default true. */
  valid?: boolean;
  /** The §2 code of an error answer. */
  code?: string;
}

export const bearer = (t: Tenant) => t.auth;
export const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const json = { 'content-type': 'application/json' };

let seq = 0;
/** One call through the proxy, with an X-Request-Id of its own; answers its exchange and body. */
export async function send(
  c: Pick<Ctx, 'proxy'>,
  call: Call,
): Promise<{ exchange: Exchange; status: number; body: unknown }> {
  const requestId = `conf-${++seq}-${randomBytes(3).toString('hex')}`;
  const hasBody = call.body !== undefined || call.raw !== undefined;
  const res = await fetch(`${c.proxy.url}${call.path}`, {
    method: call.method ?? (hasBody ? 'POST' : 'GET'),
    headers: { 'x-request-id': requestId, ...(hasBody ? json : {}), ...call.headers },
    body: call.raw ?? (call.body === undefined ? undefined : JSON.stringify(call.body)),
    redirect: 'manual',
  });
  const text = await res.text();
  const exchange = c.proxy.exchanges.find((e) => e.requestId === requestId)!;
  expect(exchange, `${call.path} went through the proxy`).toBeDefined();
  let body: unknown = text;
  if (/[/+]json\b/.test(res.headers.get('content-type') ?? '')) body = JSON.parse(text);
  return { exchange, status: res.status, body };
}

/** The browser's walk: start an OAuth install for `t` and land on the callback Slack redirects to. */
export async function oauthCallbackFor(
  c: Pick<Ctx, 'proxy' | 'slack'>,
  t: Tenant,
  team: string,
  opts: { deny?: boolean } = {},
): Promise<Call> {
  c.slack.setConsent(team, opts);
  const start = await send(c, {
    path: '/api/v1/connectors/chatapp/oauth/start',
    headers: bearer(t),
    body: { redirect_uri: `${c.proxy.url}/api/v1/connectors/oauth/callback` },
  });
  expect(start.status).toBe(200);
  const consent = await fetch((start.body as { authorize_url: string }).authorize_url, { redirect: 'manual' });
  const landing = new URL(consent.headers.get('location')!);
  return { path: `${landing.pathname}${landing.search}` };
}

/** A message event of the workspace's first channel, in Slack's envelope. */
export function slackMessage(c: Ctx): Record<string, unknown> {
  const team = c.slack.team(c.team);
  const ch = team.channels.get(c.channel)!;
  return eventEnvelope(c.slack, c.team, messageEvent(team, ch, { ts: nextTs(), user: 'U0CONF', text: 'hi' }));
}

export function slackDelivery(
  c: Ctx,
  envelope: Record<string, unknown>,
  signing: 'valid' | 'forged' | 'missing' = 'valid',
): Call {
  const raw = JSON.stringify(envelope);
  return {
    path: '/api/v1/connectors/chatapp/events',
    headers: signedHeaders(c.slack.signingSecret, raw, signing),
    raw,
  };
}

export function githubDelivery(c: Ctx, event: string | null, payload: unknown, signature?: string): Call {
  const raw = JSON.stringify(payload);
  const headers: Record<string, string> = {
    ...json,
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': signature ?? sign(c.h.secret, raw),
  };
  if (event !== null) headers['x-github-event'] = event;
  return { path: '/api/v1/connectors/codehost/webhooks', headers, raw };
}

export function adminInstall(
  c: Pick<Ctx, 'h'>,
  t: Tenant,
  installation: number,
  headers: Record<string, string> = {},
  body = {},
): Call {
  return {
    path: '/api/v1/connectors/codehost/admin/install',
    headers: { ...bearer(t), 'x-service-admin-token': c.h.adminToken, ...headers },
    body: {
      user_id: t.user_id,
      github_installation_id: installation,
      account_type: 'Organization',
      account_login: `org-${installation}`,
      repository_selection: 'all',
      ...body,
    },
  };
}

export function emit(c: Ctx, install: string, body: unknown, headers: Record<string, string> = {}): Call {
  return { path: `/api/v1/connectors/installs/${install}/emit`, headers: { ...bearer(c.a), ...headers }, body };
}

export const chatMessage = (channel: string, text = 'hello from the conformance test') => ({
  kind: 'chatapp.message',
  body: { channel_id: channel, text },
});
