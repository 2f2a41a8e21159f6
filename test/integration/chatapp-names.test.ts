/**
 * INTERFACE §9.5 end to end against the fake Slack: after the backfill of a seeded
 * workspace the graph names its channels (conversations.list) and users (users.info,
 * looked up once per user however often they appear), history's reactions are edges, and
 * live `user_change` / `channel_rename` events update the names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { nextTs, type FakeChannel, type FakeTeam } from 'connector-service/testing';
import { until } from '../support/until.js';

let s: ChatStack;
let tenant: Tenant;
let team: FakeTeam;
let general: FakeChannel;
let installId: string;

beforeAll(async () => {
  s = await startChatStack();
  tenant = await s.node.tenant('names');
  team = s.slack.addTeam();
  team.users = new Map([
    ['U0ADA', { id: 'U0ADA', name: 'ada', real_name: 'Ada Lovelace', updated: 1_700_000_000 }],
    ['U0GRACE', { id: 'U0GRACE', name: 'grace', real_name: 'Grace Hopper', updated: 1_700_000_000 }],
    ['U0BOT', { id: 'U0BOT', name: 'deploybot', real_name: 'Deploy Bot', is_bot: true }],
  ]);
  general = s.slack.addChannel(team.id, { type: 'channel', name: 'general' });
  general.messages.push(
    { ts: nextTs(), user: 'U0ADA', text: 'first' },
    {
      ts: nextTs(),
      user: 'U0GRACE',
      text: 'the release is out',
      reactions: [
        { name: 'tada', users: ['U0ADA', 'U0GHOST'] },
        { name: 'rocket', users: ['U0BOT'] },
      ],
    },
    { ts: nextTs(), user: 'U0ADA', text: 'third' },
  );
  ({ install_id: installId } = await installOk(s, tenant, team.id));
}, 60_000);
afterAll(() => s?.stop());

interface Node {
  id: string;
  external_id: string;
  props: Record<string, any>;
}

async function nodes(kind: string): Promise<Node[]> {
  const res = await fetch(`${s.node.url}/api/v1/graph/nodes?kind=${kind}&install_id=${installId}&limit=500`, {
    headers: tenant.auth,
  });
  return ((await json(res)) as { nodes: Node[] }).nodes;
}

const nodeWhere = (kind: string, externalId: string, ok: (n: Node) => boolean, what: string) =>
  until(what, async () => (await nodes(kind)).find((n) => n.external_id === externalId && ok(n)), {
    timeoutMs: 30_000,
  });

describe('chat names (INTERFACE §9.5)', () => {
  it('names channels from the listing and users from users.info, once per user; history reactions are edges', async () => {
    const channel = await nodeWhere('chat.channel', `${team.id}:${general.id}`, (n) => !!n.props.name, 'channel name');
    expect(channel.props).toMatchObject({ name: 'general', is_private: false, is_im: false, is_mpim: false });

    const ada = await nodeWhere('chat.user', `${team.id}:U0ADA`, (n) => !!n.props.name, 'ada named');
    expect(ada.props).toMatchObject({ name: 'ada', real_name: 'Ada Lovelace', is_bot: false });
    const bot = await nodeWhere('chat.user', `${team.id}:U0BOT`, (n) => !!n.props.name, 'bot named');
    expect(bot.props).toMatchObject({ name: 'deploybot', is_bot: true });
    await nodeWhere('chat.user', `${team.id}:U0GRACE`, (n) => n.props.real_name === 'Grace Hopper', 'grace named');

    // A user Slack does not know keeps a node with its id only.
    await until(
      'users.info for the ghost user',
      async () => s.slack.callsOf('users.info').some((c) => c.params.user === 'U0GHOST'),
      {
        timeoutMs: 20_000,
      },
    );
    const ghost = (await nodes('chat.user')).find((n) => n.external_id === `${team.id}:U0GHOST`)!;
    expect(ghost.props).toEqual({ user_id: 'U0GHOST' });

    // The cache: Ada wrote two messages and reacted once, yet was looked up once; the listed channel never.
    expect(s.slack.callsOf('users.info').filter((c) => c.params.user === 'U0ADA')).toHaveLength(1);
    expect(s.slack.callsOf('conversations.info')).toHaveLength(0);

    const msg = (await nodes('chat.message')).find((n) => n.props.text === 'the release is out')!;
    const one = await json(await fetch(`${s.node.url}/api/v1/graph/nodes/${msg.id}`, { headers: tenant.auth }));
    const reacted = (one.edges as Array<{ type: string; from: string; props: { name: string } }>)
      .filter((e) => e.type === 'reacted')
      .map((e) => `${e.from === ada.id ? 'ada' : e.from === bot.id ? 'bot' : 'other'} ${e.props.name}`)
      .sort();
    expect(reacted).toEqual(['ada tada', 'bot rocket', 'other tada']);
  });

  it('live user_change and channel_rename update the names without another lookup', async () => {
    await nodeWhere('chat.user', `${team.id}:U0ADA`, (n) => !!n.props.name, 'ada named');
    const before = s.slack.callsOf('users.info').length;
    const change = await s.slack.deliver(team.id, {
      type: 'user_change',
      user: { id: 'U0ADA', name: 'ada', real_name: 'Ada King', is_bot: false, updated: 1_800_000_000 },
      event_ts: nextTs(),
    });
    expect(change.status).toBe(200);
    const rename = await s.slack.deliver(team.id, {
      type: 'channel_rename',
      channel: { id: general.id, name: 'announcements', created: 1_700_000_000 },
      event_ts: nextTs(),
    });
    expect(rename.status).toBe(200);
    await nodeWhere('chat.user', `${team.id}:U0ADA`, (n) => n.props.real_name === 'Ada King', 'ada renamed');
    await nodeWhere('chat.channel', `${team.id}:${general.id}`, (n) => n.props.name === 'announcements', 'rename');
    expect(s.slack.callsOf('users.info').length).toBe(before);
  });

  it('a channel first seen live is looked up with conversations.info', async () => {
    const fresh = s.slack.addChannel(team.id, { type: 'group', name: 'war-room' });
    const ts = nextTs();
    const res = await s.slack.deliver(team.id, {
      type: 'message',
      channel: fresh.id,
      channel_type: 'group',
      user: 'U0GRACE',
      text: 'all hands',
      ts,
      event_ts: ts,
    });
    expect(res.status).toBe(200);
    const ch = await nodeWhere('chat.channel', `${team.id}:${fresh.id}`, (n) => !!n.props.name, 'looked-up channel');
    expect(ch.props).toMatchObject({ name: 'war-room', is_private: true, is_im: false });
    expect(s.slack.callsOf('conversations.info').map((c) => c.params.channel)).toEqual([fresh.id]);
  });
});
