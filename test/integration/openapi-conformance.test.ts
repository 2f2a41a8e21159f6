/**
 * The OpenAPI document (INTERFACE §9.3) against the server, through a strict validating
 * proxy (test/support/openapi-proxy.ts) in front of a real node with both connectors, the
 * fake Slack and the fake GitHub: a table of valid and invalid calls of every operation,
 * each with the status it must answer. A valid call must pass the document and an invalid
 * one must fail it (so the document's limits are the server's); every answer, to either,
 * must be documented for its status with a body that matches. The fake Slack's own
 * deliveries go through the proxy too, and the setup's calls, so the test also covers
 * traffic nobody planned; at the end every operation has answered a success.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventEnvelope, FakeSlack, messageEvent, nextTs, signedHeaders } from 'connector-service/testing';
import { encodeIngestMessage, ingestMsgId } from '../../src/ingest/message.js';
import { installKey, names as makeNames, shardOf } from '../../src/runtime/names.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import { chatEnv } from '../fakes/slack-harness.js';
import {
  examplePayload,
  forInstallation,
  sign,
  startCodehostHarness,
  type CodehostHarness,
} from '../fakes/github-harness.js';
import { startValidatingProxy, type Exchange, type ValidatingProxy } from '../support/openapi-proxy.js';
import { until } from '../support/until.js';

let slack: FakeSlack;
let h: CodehostHarness;
let proxy: ValidatingProxy;
let operationIds: string[];

type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
interface Ctx {
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
const c = {} as Ctx;

interface Call {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Sent as is instead of `body`'s JSON. */
  raw?: string;
}
interface Row {
  name: string;
  call: (c: Ctx) => Call | Promise<Call>;
  status: number;
  /** Whether the document accepts the request; default true. */
  valid?: boolean;
  /** The §2 code of an error answer. */
  code?: string;
}

const bearer = (t: Tenant) => t.auth;
const json = { 'content-type': 'application/json' };
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

let seq = 0;
/** One call through the proxy; answers its exchange and body. */
async function send(call: Call): Promise<{ exchange: Exchange; status: number; body: unknown }> {
  const requestId = `conf-${++seq}-${randomBytes(3).toString('hex')}`;
  const hasBody = call.body !== undefined || call.raw !== undefined;
  const res = await fetch(`${proxy.url}${call.path}`, {
    method: call.method ?? (hasBody ? 'POST' : 'GET'),
    headers: { 'x-request-id': requestId, ...(hasBody ? json : {}), ...call.headers },
    body: call.raw ?? (call.body === undefined ? undefined : JSON.stringify(call.body)),
    redirect: 'manual',
  });
  const text = await res.text();
  const exchange = proxy.exchanges.find((e) => e.requestId === requestId)!;
  expect(exchange, `${call.path} went through the proxy`).toBeDefined();
  let body: unknown = text;
  if (/json/.test(res.headers.get('content-type') ?? '')) body = JSON.parse(text);
  return { exchange, status: res.status, body };
}

/** The browser's walk: start an OAuth install for `t` and land on the callback Slack redirects to. */
async function oauthCallbackFor(t: Tenant, team: string, opts: { deny?: boolean } = {}): Promise<Call> {
  slack.setConsent(team, opts);
  const start = await send({
    path: '/api/v1/connectors/chatapp/oauth/start',
    headers: bearer(t),
    body: { redirect_uri: `${proxy.url}/api/v1/connectors/oauth/callback` },
  });
  expect(start.status).toBe(200);
  const consent = await fetch((start.body as { authorize_url: string }).authorize_url, { redirect: 'manual' });
  const landing = new URL(consent.headers.get('location')!);
  return { path: `${landing.pathname}${landing.search}` };
}

/** A message event of the workspace's first channel, in Slack's envelope. */
function slackMessage(x: Ctx): Record<string, unknown> {
  const team = slack.team(x.team);
  const ch = team.channels.get(x.channel)!;
  return eventEnvelope(slack, x.team, messageEvent(team, ch, { ts: nextTs(), user: 'U0CONF', text: 'hi' }));
}

function slackDelivery(envelope: Record<string, unknown>, signing: 'valid' | 'forged' | 'missing' = 'valid'): Call {
  const raw = JSON.stringify(envelope);
  return { path: '/api/v1/connectors/chatapp/events', headers: signedHeaders(slack.signingSecret, raw, signing), raw };
}

function githubDelivery(event: string | null, payload: unknown, signature?: string): Call {
  const raw = JSON.stringify(payload);
  const headers: Record<string, string> = {
    ...json,
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': signature ?? sign(h.secret, raw),
  };
  if (event !== null) headers['x-github-event'] = event;
  return { path: '/api/v1/connectors/codehost/webhooks', headers, raw };
}

const adminInstall = (t: Tenant, installation: number, headers: Record<string, string> = {}, body = {}): Call => ({
  path: '/api/v1/connectors/codehost/admin/install',
  headers: { ...bearer(t), 'x-service-admin-token': h.adminToken, ...headers },
  body: {
    user_id: t.user_id,
    github_installation_id: installation,
    account_type: 'Organization',
    account_login: `org-${installation}`,
    repository_selection: 'all',
    ...body,
  },
});

function emit(x: Ctx, install: string, body: unknown, headers: Record<string, string> = {}): Call {
  return { path: `/api/v1/connectors/installs/${install}/emit`, headers: { ...bearer(x.a), ...headers }, body };
}
const chatMessage = (channel: string, text = 'hello from the conformance test') => ({
  kind: 'chatapp.message',
  body: { channel_id: channel, text },
});

beforeAll(async () => {
  slack = await new FakeSlack().start();
  h = await startCodehostHarness({ ...chatEnv(slack), SERVICE_GITHUB_RECONCILE_S: '0' });
  const spec = (await (await fetch(`${h.node.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  operationIds = Object.values(spec.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
  proxy = await startValidatingProxy(h.node.url, spec);
  // The fake Slack delivers its events, the echo of every post too, through the proxy.
  slack.eventsUrl = `${proxy.url}/api/v1/connectors/chatapp/events`;
  slack.echo = 'http';

  c.a = await h.tenant('conformance-a');
  c.b = await h.tenant('conformance-b');
  c.team = slack.addTeam().id;
  const channel = (name: string, text?: string) => {
    const ch = slack.addChannel(c.team, { name });
    const ts = nextTs();
    if (text !== undefined) ch.messages.push({ ts, user: 'U0CONF', text });
    return { id: ch.id, ts };
  };
  const general = channel('general', 'the message the graph gets from backfill');
  const reacted = channel('reacted', 'a message to react to');
  [c.channel, c.ts, c.reacted, c.reactedTs] = [general.id, general.ts, reacted.id, reacted.ts];
  [c.posted, c.keyed, c.throttled] = [channel('posted').id, channel('keyed').id, channel('throttled').id];
  const landing = await send(await oauthCallbackFor(c.a, c.team));
  expect(landing.status).toBe(200);
  c.chat = (landing.body as { install_id: string }).install_id;

  c.installation = 7_100_000 + Math.floor(Math.random() * 100_000);
  h.gh.addInstallation(c.installation);
  const installed = await send(adminInstall(c.a, c.installation));
  expect(installed.status).toBe(201);
  c.code = (installed.body as { install_id: string }).install_id;

  c.node = await until(
    'the backfilled message in the graph',
    async () => {
      const res = await fetch(`${h.node.url}/api/v1/graph/nodes?kind=chat.message&install_id=${c.chat}`, {
        headers: bearer(c.a),
      });
      const page = (await res.json()) as { nodes: Array<{ id: string; external_id: string }> };
      return page.nodes.find((n) => n.external_id.endsWith(c.ts))?.id;
    },
    { timeoutMs: 20_000 },
  );

  const n = makeNames(h.node.namespace);
  const event = {
    installId: c.code,
    tenantId: c.a.tenant_id,
    connectorId: 'codehost',
    id: randomUUID(),
    kind: 'issues.opened',
    occurredAt: null,
    payload: forInstallation(examplePayload('issues', 'opened'), c.installation),
  };
  c.deadLetter = await recordDeadLetter(h.node.pool, {
    stream: n.ingestStream,
    streamSeq: 1,
    subject: n.ingestSubject(shardOf(installKey(c.code), h.node.config.shards), 'codehost', c.code),
    msgId: ingestMsgId(c.code, event.id),
    installId: c.code,
    deliveries: 8,
    error: 'relation "graph_nodes" is locked',
    payload: encodeIngestMessage(event),
  });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await h?.stop();
  await slack?.close();
});

const ROWS: Row[] = [
  // documentation and operations
  { name: 'the document', call: () => ({ path: '/openapi.json' }), status: 200 },
  { name: 'the page', call: () => ({ path: '/docs' }), status: 200 },
  { name: 'liveness', call: () => ({ path: '/healthz' }), status: 200 },
  { name: 'readiness', call: () => ({ path: '/readyz' }), status: 200 },
  { name: 'metrics', call: () => ({ path: '/metrics' }), status: 200 },

  // connectors
  { name: 'connectors', call: (x) => ({ path: '/api/v1/connectors', headers: bearer(x.a) }), status: 200 },
  {
    name: 'connectors without a key',
    call: () => ({ path: '/api/v1/connectors' }),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
  {
    name: 'connectors with an unknown key',
    call: () => ({ path: '/api/v1/connectors', headers: { authorization: 'Bearer not-a-key-of-anyone' } }),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'OAuth start of the code host',
    call: (x) => ({
      path: '/api/v1/connectors/codehost/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'https://app.example.org/cb' },
    }),
    status: 400,
    code: 'custom_install_path',
  },
  {
    name: 'OAuth start of an unknown connector',
    call: (x) => ({
      path: '/api/v1/connectors/gitlab/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'https://app.example.org/cb' },
    }),
    status: 404,
    valid: false,
    code: 'not_found',
  },
  {
    name: 'chat OAuth start',
    call: (x) => ({
      path: '/api/v1/connectors/chatapp/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'https://app.example.org/cb' },
    }),
    status: 200,
  },
  {
    name: 'chat OAuth start to a non-http redirect',
    call: (x) => ({
      path: '/api/v1/connectors/chatapp/oauth/start',
      headers: bearer(x.a),
      body: { redirect_uri: 'ftp://app.example.org/cb' },
    }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'chat OAuth start without a redirect',
    call: (x) => ({ path: '/api/v1/connectors/chatapp/oauth/start', headers: bearer(x.a), body: {} }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'OAuth callback with a forged state',
    call: () => ({ path: '/api/v1/connectors/oauth/callback?code=abc&state=forged' }),
    status: 400,
    code: 'invalid_state',
  },
  {
    name: 'OAuth callback after the installer declined',
    call: (x) => oauthCallbackFor(x.a, x.team, { deny: true }),
    status: 400,
    code: 'access_denied',
  },
  {
    name: 'OAuth callback for a workspace another tenant holds',
    call: (x) => oauthCallbackFor(x.b, x.team),
    status: 409,
    code: 'workspace_already_installed',
  },

  // installs
  { name: 'installs', call: (x) => ({ path: '/api/v1/connectors/installs', headers: bearer(x.a) }), status: 200 },
  {
    name: 'installs of one connector',
    call: (x) => ({ path: '/api/v1/connectors/installs?connector_id=codehost', headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'installs of an unknown connector',
    call: (x) => ({ path: '/api/v1/connectors/installs?connector_id=gitlab', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'installs with an unknown parameter',
    call: (x) => ({ path: '/api/v1/connectors/installs?colour=red', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'one install, with its effects',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'an unknown install',
    call: (x) => ({ path: `/api/v1/connectors/installs/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: "another tenant's install",
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'a malformed install id',
    call: (x) => ({ path: '/api/v1/connectors/installs/not-an-id', headers: bearer(x.a) }),
    status: 404,
    valid: false,
    code: 'not_found',
  },
  {
    name: 'chat health',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/health`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'code-host health',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.code}/health`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'events',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'events at the largest limit',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?limit=500`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'events at limit=5e1 (an integer, as JSON counts them)',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?limit=5e1`, headers: bearer(x.a) }),
    status: 200,
  },
  ...['0', '501', 'abc', '2.5'].map((limit): Row => ({
    name: `events with limit=${limit}`,
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?limit=${limit}`, headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  })),
  {
    name: 'events with a cursor the service never issued',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/events?cursor=zzz`, headers: bearer(x.a) }),
    status: 400,
    code: 'bad_request',
  },
  { name: 'emit a chat message', call: (x) => emit(x, x.chat, chatMessage(x.posted)), status: 200 },
  {
    name: 'emit a chat reaction',
    call: (x) =>
      emit(x, x.chat, {
        kind: 'chatapp.reaction',
        body: { channel_id: x.reacted, timestamp: x.reactedTs, name: ':eyes:' },
      }),
    status: 200,
  },
  {
    name: 'emit a code-host comment',
    call: (x) =>
      emit(x, x.code, {
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'Codertocat/Hello-World', issue_number: 1, body: 'hello' },
      }),
    status: 200,
  },
  {
    name: 'emit an unknown kind',
    call: (x) => emit(x, x.chat, { kind: 'chatapp.poke', body: {} }),
    status: 400,
    valid: false,
    code: 'bad_config',
  },
  {
    name: 'emit a reaction without its timestamp',
    call: (x) => emit(x, x.chat, { kind: 'chatapp.reaction', body: { channel_id: x.reacted, name: 'eyes' } }),
    status: 400,
    valid: false,
    code: 'bad_config',
  },
  {
    name: "emit a code-host kind to a chat install (the install's own check)",
    call: (x) =>
      emit(x, x.chat, {
        kind: 'codehost.label',
        body: { repo_full_name: 'octo/repo', issue_number: 1, labels: ['bug'] },
      }),
    status: 400,
    code: 'bad_config',
  },
  {
    name: 'emit to an unknown install',
    call: (x) => emit(x, UNKNOWN, chatMessage(x.posted)),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'emit with an Idempotency-Key',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed, 'once'), { 'idempotency-key': 'conformance-1' }),
    status: 200,
  },
  {
    name: 'emit with that key and another body',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed, 'twice'), { 'idempotency-key': 'conformance-1' }),
    status: 409,
    code: 'idempotency_key_reused',
  },
  {
    name: 'emit with a malformed Idempotency-Key',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed), { 'idempotency-key': 'has space' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'emit past the body limit',
    call: (x) => emit(x, x.chat, chatMessage(x.keyed, 'x'.repeat(1024 * 1024))),
    status: 413,
    valid: false,
    code: 'payload_too_large',
  },
  {
    name: 'emit JSON that does not parse',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/emit`, headers: bearer(x.a), raw: '{"kind":' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },

  // graph
  { name: 'nodes', call: (x) => ({ path: '/api/v1/graph/nodes', headers: bearer(x.a) }), status: 200 },
  {
    name: 'nodes found by text',
    call: (x) => ({ path: '/api/v1/graph/nodes?q=backfill&kind=chat.message', headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'nodes with a blank query',
    call: (x) => ({ path: '/api/v1/graph/nodes?q=%20%20', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'nodes of an unknown kind',
    call: (x) => ({ path: '/api/v1/graph/nodes?kind=chat.file', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: "nodes of another tenant's install",
    call: (x) => ({ path: `/api/v1/graph/nodes?install_id=${x.chat}`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'one node with its edges',
    call: (x) => ({ path: `/api/v1/graph/nodes/${x.node}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'an unknown node',
    call: (x) => ({ path: `/api/v1/graph/nodes/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'reply to a message',
    call: (x) => ({
      path: `/api/v1/graph/nodes/${x.node}/actions`,
      headers: bearer(x.a),
      body: { action: 'reply', text: 'seen' },
    }),
    status: 200,
  },
  {
    name: 'label a message (does not fit)',
    call: (x) => ({
      path: `/api/v1/graph/nodes/${x.node}/actions`,
      headers: bearer(x.a),
      body: { action: 'label', labels: ['bug'] },
    }),
    status: 400,
    code: 'bad_request',
  },
  {
    name: 'an unknown action',
    call: (x) => ({ path: `/api/v1/graph/nodes/${x.node}/actions`, headers: bearer(x.a), body: { action: 'poke' } }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },

  // dead letters
  { name: 'dead letters', call: (x) => ({ path: '/api/v1/dead-letters', headers: bearer(x.a) }), status: 200 },
  {
    name: 'dead letters with limit=0',
    call: (x) => ({ path: '/api/v1/dead-letters?limit=0', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: 'dead letters of a malformed install id',
    call: (x) => ({ path: '/api/v1/dead-letters?install_id=nope', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: "replay another tenant's dead letter",
    call: (x) => ({ method: 'POST', path: `/api/v1/dead-letters/${x.deadLetter}/replay`, headers: bearer(x.b) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'replay a dead letter',
    call: (x) => ({ method: 'POST', path: `/api/v1/dead-letters/${x.deadLetter}/replay`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'replay a malformed id',
    call: (x) => ({ method: 'POST', path: '/api/v1/dead-letters/abc/replay', headers: bearer(x.a) }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },

  // the code host
  {
    name: 'admin install without the admin token',
    call: (x) => adminInstall(x.b, x.installation, { 'x-service-admin-token': '' }),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
  {
    name: 'admin install with a wrong admin token',
    call: (x) => adminInstall(x.b, x.installation, { 'x-service-admin-token': 'wrong' }),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'admin install, again for the same tenant',
    call: (x) => adminInstall(x.a, x.installation),
    status: 409,
    code: 'already_installed',
  },
  {
    name: 'admin install of an installation the App cannot reach',
    call: (x) => adminInstall(x.b, 1),
    status: 400,
    code: 'installation_not_accessible',
  },
  {
    name: 'admin install with a bad body',
    call: (x) => adminInstall(x.b, x.installation, {}, { account_type: 'Team' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  { name: 'a GitHub ping', call: () => githubDelivery('ping', { zen: 'Keep it logically awesome.' }), status: 200 },
  {
    name: 'a GitHub event for the installation',
    call: (x) => githubDelivery('issues', forInstallation(examplePayload('issues', 'opened'), x.installation)),
    status: 202,
  },
  {
    name: 'a GitHub delivery with a wrong signature',
    call: () => githubDelivery('ping', { zen: 'x' }, 'sha256=00'),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'a GitHub delivery without its event header',
    call: () => githubDelivery(null, { zen: 'x' }),
    status: 400,
    valid: false,
    code: 'bad_request',
  },
  {
    name: "Slack's URL verification",
    call: () => slackDelivery({ type: 'url_verification', token: 't', challenge: 'c-123' }),
    status: 200,
  },
  {
    name: 'a Slack message event',
    call: (x) => slackDelivery(slackMessage(x)),
    status: 200,
  },
  {
    name: 'a Slack event with a forged signature',
    call: (x) => slackDelivery(slackMessage(x), 'forged'),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'a Slack event without its signature headers',
    call: (x) => slackDelivery(slackMessage(x), 'missing'),
    status: 401,
    valid: false,
    code: 'unauthorized',
  },
];

/** After the throttle test; the chat install goes, and what follows sees it gone. */
const AFTER: Row[] = [
  {
    name: 'uninstall',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'uninstall again',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/connectors/installs/${x.chat}`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'uninstall an unknown install',
    call: (x) => ({ method: 'DELETE', path: `/api/v1/connectors/installs/${UNKNOWN}`, headers: bearer(x.a) }),
    status: 404,
    code: 'not_found',
  },
  {
    name: 'health of an uninstalled install',
    call: (x) => ({ path: `/api/v1/connectors/installs/${x.chat}/health`, headers: bearer(x.a) }),
    status: 200,
  },
  {
    name: 'emit to an uninstalled install',
    call: (x) => emit(x, x.chat, chatMessage(x.posted)),
    status: 409,
    code: 'install_not_active',
  },
];

/** Request ids of the calls the table expects the document to refuse. */
const refused = new Set<string | null>();

async function check(row: Row): Promise<void> {
  const { exchange, status, body } = await send(await row.call(c));
  if (row.valid === false) refused.add(exchange.requestId);
  expect(status, JSON.stringify(body)).toBe(row.status);
  if (row.code !== undefined) expect((body as { error: { code: string } }).error.code).toBe(row.code);
  expect(exchange.responseViolations).toEqual([]);
  if (row.valid === false) expect(exchange.requestViolations, 'the document refuses this call').not.toEqual([]);
  else expect(exchange.requestViolations).toEqual([]);
}

describe('every operation, through a strict validating proxy', () => {
  it.each(ROWS.map((r) => [r.name, r] as const))('%s', (_name, row) => check(row));

  it('a throttled channel: 429 rate_limited with Retry-After, as documented', async () => {
    // One write a second per channel (INTERFACE §3): of five at once, at most one or two pass.
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => send(emit(c, c.chat, chatMessage(c.throttled, `burst ${i}`)))),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.every((s) => s === 200 || s === 429),
      statuses.join(),
    ).toBe(true);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    for (const a of answers) {
      expect(a.exchange.requestViolations).toEqual([]);
      expect(a.exchange.responseViolations).toEqual([]);
    }
  });

  it.each(AFTER.map((r) => [r.name, r] as const))('%s', (_name, row) => check(row));

  it('broke the document nowhere: not in the setup, nor in the fake Slack’s own deliveries', async () => {
    // The fake Slack's deliveries (the echo of every post) carry no id of ours.
    await until('an echo of a post through the proxy', () =>
      proxy.exchanges.some((e) => e.operationId === 'receiveChatappEvents' && e.requestId === null && e.status > 0),
    );
    expect(proxy.exchanges.filter((e) => e.responseViolations.length > 0)).toEqual([]);
    expect(proxy.exchanges.filter((e) => !refused.has(e.requestId) && e.requestViolations.length > 0)).toEqual([]);
  });

  it('answered a success of every operation of the document', () => {
    const succeeded = new Set(
      proxy.exchanges.filter((e) => e.status >= 200 && e.status < 300).map((e) => e.operationId),
    );
    // The generic OAuth start succeeds only for a connector with its own start route, which
    // answers at its own, more specific path (startChatappOAuth, above).
    expect(operationIds.filter((id) => !succeeded.has(id))).toEqual(['startOAuth']);
  });
});
