/**
 * The graph's two-way sync end to end, on a real node against the fake Slack
 * (src/testing): OAuth install → history backfill → ingest → projection → a node action
 * (INTERFACE §3) → install actor over the NATS router → the chat driver →
 * `@slack/web-api` → the fake, which checks token, scopes, channel and thread as Slack does.
 *
 * The node runs on a database of its own: with the chat connector enabled, a node resumes
 * every unfinished chat backfill it finds, and other test files' installs must not be among them.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTenant } from '../../src/store/tenants.js';
import { FakeSlack } from 'connector-service/testing';
import { chatEnv, installOk, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { TEST_MASTER_KEY, testAdminDatabaseUrl } from '../support/env.js';
import { startTestNode } from '../support/node.js';
import { until } from '../support/until.js';

const TEAM = 'T0GRAPHACT';
let stack: ChatStack;
let pool: pg.Pool;
let dbName: string;

async function adminQuery(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: testAdminDatabaseUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  dbName = `graph_act_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${dbName}`);
  const url = new URL(testAdminDatabaseUrl());
  url.pathname = `/${dbName}`;
  pool = createPool(url.toString(), { max: 3 });
  await migrate(pool);

  const slack = await new FakeSlack().start();
  slack.addTeam({ id: TEAM, name: 'acme' });
  const general = slack.addChannel(TEAM, { id: 'C1GRAPH', name: 'general' });
  general.messages.push({
    ts: '1700000900.000100',
    user: 'U1',
    text: 'release checklist',
    replies: [{ ts: '1700000900.000200', user: 'U2', text: 'who signs off?', thread_ts: '1700000900.000100' }],
  });
  const random = slack.addChannel(TEAM, { id: 'C2GRAPH', name: 'random' });
  random.messages.push({ ts: '1700000900.000300', user: 'U1', text: 'lunch?' });
  const node = await startTestNode(chatEnv(slack, { DATABASE_URL: url.toString() }));
  stack = {
    slack,
    node,
    async stop() {
      await node.stop();
      await slack.close();
    },
  };
});

afterAll(async () => {
  await stack?.stop();
  await pool?.end();
  await adminQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

interface ApiNode {
  id: string;
  external_id: string;
  props: Record<string, unknown>;
}

const act = (t: Tenant, id: string, body: unknown) =>
  fetch(`${stack.node.url}/api/v1/graph/nodes/${id}/actions`, {
    method: 'POST',
    headers: { ...t.auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('node actions reach the chat platform', () => {
  it('replies in the thread of a backfilled reply and reacts to a message, at their coordinates', async () => {
    const created = await createTenant(pool, TEST_MASTER_KEY, 'graph act');
    const tenant: Tenant = { ...created, auth: { authorization: `Bearer ${created.api_key}` } };
    const { install_id } = await installOk(stack, tenant, TEAM);

    // The backfill walks the fake's history; the graph fills as its events are ingested.
    const messages = await until(
      'three backfilled messages in the graph',
      async () => {
        const res = await fetch(`${stack.node.url}/api/v1/graph/nodes?kind=chat.message`, { headers: tenant.auth });
        const nodes = ((await res.json()) as { nodes: ApiNode[] }).nodes;
        return nodes.length === 3 ? nodes : undefined;
      },
      { timeoutMs: 15_000 },
    );
    const byExt = new Map(messages.map((n) => [n.external_id, n]));
    const reply = byExt.get(`${TEAM}:C1GRAPH:1700000900.000200`)!;
    expect(reply.props).toMatchObject({ text: 'who signs off?', thread_ts: '1700000900.000100' });

    const res = await act(tenant, reply.id, { action: 'reply', text: 'I do' });
    expect(res.status).toBe(200);
    const receipt = (await res.json()) as { provider_id: string };
    expect(receipt).toMatchObject({ kind: 'chatapp.message', install_id, provider_id: expect.any(String) });
    expect(stack.slack.posted).toEqual([
      {
        teamId: TEAM,
        channel: 'C1GRAPH',
        ts: receipt.provider_id,
        text: 'I do',
        thread_ts: '1700000900.000100',
        at: expect.any(Number),
      },
    ]);

    const lunch = byExt.get(`${TEAM}:C2GRAPH:1700000900.000300`)!;
    const react = await act(tenant, lunch.id, { action: 'react', name: 'eyes' });
    expect(react.status).toBe(200);
    expect(await react.json()).toMatchObject({
      kind: 'chatapp.reaction',
      provider_id: 'C2GRAPH:1700000900.000300:eyes',
    });
    const bot = stack.slack.team(TEAM).botUserId;
    expect(stack.slack.team(TEAM).channels.get('C2GRAPH')!.messages[0]!.reactions).toEqual([
      { name: 'eyes', users: [bot] },
    ]);
  });
});
