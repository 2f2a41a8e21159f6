/**
 * MCP (INTERFACE §10.3) on a real node against the fake Slack, through the SDK's own
 * `Client` and `StreamableHTTPClientTransport` over HTTP: an agent finds a backfilled
 * message with `search_nodes`, reads it with `get_node`, and replies with `act_on_node`,
 * which goes the way the REST action goes (install actor over the NATS router, the chat
 * driver, `@slack/web-api`) to the fake, once for a repeated `idempotency_key`. Another
 * tenant's agent sees none of it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from 'connector-service/testing';
import { installOk, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';

const TEAM = 'T0MCPNODE';
const OTHER = 'T0MCPNODEB';
let stack: ChatStack;
let a: Tenant;
let b: Tenant;
const clients: Client[] = [];

interface ApiNode {
  id: string;
  external_id: string;
  props: Record<string, unknown>;
}

async function agent(t: Tenant): Promise<Client> {
  const client = new Client({ name: 'mcp-node-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.node.url}/mcp`), { requestInit: { headers: t.auth } }),
  );
  clients.push(client);
  return client;
}

const call = async (c: Client, name: string, args: Record<string, unknown>) =>
  (await c.callTool({ name, arguments: args })) as CallToolResult;

/** The chat messages `search_nodes` finds for `q`, once the backfill has brought any. */
const messagesFound = (c: Client, q: string) =>
  until(
    `search_nodes finds ${q}`,
    async () => {
      const found = await call(c, 'search_nodes', { q, kind: 'chat.message' });
      const nodes = (found.structuredContent as { nodes: ApiNode[] }).nodes;
      return nodes.length > 0 ? nodes : undefined;
    },
    { timeoutMs: 15_000 },
  );

beforeAll(async () => {
  const slack = await new FakeSlack().start();
  slack.addTeam({ id: TEAM, name: 'acme' });
  slack.addChannel(TEAM, { id: 'C1MCP', name: 'general' }).messages.push({
    ts: '1700001000.000100',
    user: 'U1',
    text: 'who reviews the mcp rollout?',
  });
  slack.addTeam({ id: OTHER, name: 'globex' });
  slack.addChannel(OTHER, { id: 'C2MCP', name: 'general' }).messages.push({
    ts: '1700001000.000200',
    user: 'U2',
    text: 'the mcp rollout of globex',
  });
  stack = await startChatStack({}, slack);
  a = await stack.node.tenant('mcp-node-a');
  b = await stack.node.tenant('mcp-node-b');
  await installOk(stack, a, TEAM);
  await installOk(stack, b, OTHER);
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await stack?.stop();
});

describe('an agent on a real node', () => {
  it('finds a message, replies in its thread once per idempotency_key, and another tenant sees none of it', async () => {
    const c = await agent(a);
    const [message] = await messagesFound(c, 'rollout');
    expect(message!.props.text).toBe('who reviews the mcp rollout?');
    const read = await call(c, 'get_node', { id: message!.id });
    expect(read.structuredContent).toMatchObject({ id: message!.id, external_id: `${TEAM}:C1MCP:1700001000.000100` });

    const act = { id: message!.id, action: 'reply', text: 'I will', idempotency_key: 'mcp-node-1' };
    const first = await call(c, 'act_on_node', act);
    expect(first.isError, JSON.stringify(first)).toBeFalsy();
    const receipt = first.structuredContent as { provider_id: string; kind: string };
    expect(receipt.kind).toBe('chatapp.message');
    const again = await call(c, 'act_on_node', act);
    expect(again.structuredContent).toEqual(receipt);
    expect(stack.slack.posted).toEqual([
      {
        teamId: TEAM,
        channel: 'C1MCP',
        ts: receipt.provider_id,
        text: 'I will',
        thread_ts: '1700001000.000100',
        at: expect.any(Number),
      },
    ]);

    const other = await agent(b);
    const theirs = await messagesFound(other, 'rollout');
    expect(theirs.map((n) => n.props.text)).toEqual(['the mcp rollout of globex']);
    for (const [name, args] of [
      ['get_node', { id: message!.id }],
      ['act_on_node', { id: message!.id, action: 'react', name: 'eyes' }],
    ] as const) {
      const refused = await call(other, name, args);
      expect(refused.isError).toBe(true);
      const text = (refused.content[0] as { text: string }).text;
      expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe('not_found');
    }
    expect(stack.slack.posted).toHaveLength(1);
  });
});
