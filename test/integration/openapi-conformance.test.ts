/**
 * The OpenAPI document (INTERFACE §9.3) against the server, through a strict validating
 * proxy (test/support/openapi-proxy.ts) in front of a real node with both connectors, the
 * fake Slack and the fake GitHub: a table of valid and invalid calls of every operation
 * (test/support/openapi-rows-*.ts), each with the status it must answer. A valid call must pass
 * the document and an invalid one must fail it (so the document's limits are the server's);
 * every answer, to either, must be documented for its status with a body that matches. The
 * fake Slack's own deliveries go through the proxy too, and the setup's calls, so the test
 * also covers traffic nobody planned; at the end every operation has answered a success.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack, nextTs } from 'connector-service/testing';
import { encodeIngestMessage, ingestMsgId } from '../../src/ingest/message.js';
import { installKey, names as makeNames, shardOf } from '../../src/runtime/names.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import { chatEnv } from '../support/slack-harness.js';
import { examplePayload, forInstallation, startCodehostHarness } from '../support/github-harness.js';
import { startValidatingProxy } from '../support/openapi-proxy.js';
import { until } from '../support/until.js';
import {
  adminInstall,
  bearer,
  chatMessage,
  emit,
  oauthCallbackFor,
  send,
  type Ctx,
  type Row,
} from '../support/openapi-calls.js';
import { AGENT_ROWS } from '../support/openapi-rows-agents.js';
import { PLATFORM_ROWS } from '../support/openapi-rows-platform.js';
import { READ_ROWS } from '../support/openapi-rows-reads.js';
import { AFTER_UNINSTALL, WRITE_ROWS } from '../support/openapi-rows-writes.js';
import { WEBHOOK_ROWS } from '../support/openapi-rows-webhooks.js';

const c = {} as Ctx;
let operationIds: string[];

beforeAll(async () => {
  const slack = (c.slack = await new FakeSlack().start());
  const h = (c.h = await startCodehostHarness({
    ...chatEnv(slack),
    SERVICE_GITHUB_RECONCILE_S: '0',
    // Webhooks to a loopback URL (INTERFACE §10.2), as `dev` allows them.
    SERVICE_WEBHOOKS_ALLOW_HTTP: '1',
    SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1',
  }));
  const spec = (await (await fetch(`${h.node.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  operationIds = Object.values(spec.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
  c.proxy = await startValidatingProxy(h.node.url, spec);
  // The fake Slack delivers its events, the echo of every post too, through the proxy.
  slack.eventsUrl = `${c.proxy.url}/api/v1/connectors/chatapp/events`;
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
  const landing = await send(c, await oauthCallbackFor(c, c.a, c.team));
  expect(landing.status).toBe(200);
  c.chat = (landing.body as { install_id: string }).install_id;

  c.installation = 7_100_000 + Math.floor(Math.random() * 100_000);
  h.gh.addInstallation(c.installation);
  const installed = await send(c, adminInstall(c, c.a, c.installation));
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
  await c.proxy?.close();
  await c.h?.stop();
  await c.slack?.close();
});

/** Request ids of the calls the table expects the document to refuse. */
const refused = new Set<string | null>();

async function check(row: Row): Promise<void> {
  const { exchange, status, body } = await send(c, await row.call(c));
  if (row.valid === false) refused.add(exchange.requestId);
  expect(status, JSON.stringify(body)).toBe(row.status);
  if (row.code !== undefined) expect((body as { error: { code: string } }).error.code).toBe(row.code);
  expect(exchange.responseViolations).toEqual([]);
  if (row.valid === false) expect(exchange.requestViolations, 'the document refuses this call').not.toEqual([]);
  else expect(exchange.requestViolations).toEqual([]);
}

describe('every operation, through a strict validating proxy', () => {
  it.each(
    [...READ_ROWS, ...WRITE_ROWS, ...WEBHOOK_ROWS, ...PLATFORM_ROWS, ...AGENT_ROWS].map((r) => [r.name, r] as const),
  )('%s', (_name, row) => check(row));

  it('a throttled channel: 429 rate_limited with Retry-After, as documented', async () => {
    // One write a second per channel (INTERFACE §3): of five at once, at most one or two pass.
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => send(c, emit(c, c.chat, chatMessage(c.throttled, `burst ${i}`)))),
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

  it.each(AFTER_UNINSTALL.map((r) => [r.name, r] as const))('%s', (_name, row) => check(row));

  it('broke the document nowhere: not in the setup, nor in the fake Slack’s own deliveries', async () => {
    // The fake Slack's deliveries (the echo of every post) carry no id of ours.
    await until('an echo of a post through the proxy', () =>
      c.proxy.exchanges.some((e) => e.operationId === 'receiveChatappEvents' && e.requestId === null && e.status > 0),
    );
    expect(c.proxy.exchanges.filter((e) => e.responseViolations.length > 0)).toEqual([]);
    expect(c.proxy.exchanges.filter((e) => !refused.has(e.requestId) && e.requestViolations.length > 0)).toEqual([]);
  });

  it('answered a success of every operation of the document', () => {
    const succeeded = new Set(
      c.proxy.exchanges.filter((e) => e.status >= 200 && e.status < 300).map((e) => e.operationId),
    );
    // The generic OAuth start succeeds only for a connector with its own start route, which
    // answers at its own, more specific path (startChatappOAuth, above).
    expect(operationIds.filter((id) => !succeeded.has(id))).toEqual(['startOAuth']);
  });
});
