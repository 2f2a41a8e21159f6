/** Chat backfill walker (spec §1; INTERFACE §8.16, §8.21, §8.22; spec §6.1 rule 2). */
import { afterAll, describe, expect, it } from 'vitest';
import { messageEvent, FakeSlack } from 'connector-service/testing';
import { allEvents, chatEnv, emit, installOk, json, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { nextTs, type FakeChannel, type FakeMessage } from 'connector-service/testing';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { scrapeSample } from '../support/metrics.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import { createPool } from '../../src/store/db.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { startNodeProcess } from '../support/slack-node-process.js';
import { until } from '../support/until.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Fills `ch` with `n` top-level messages; `threads` maps a message index to its reply count. */
function fill(ch: FakeChannel, n: number, threads: Record<number, number> = {}): string[] {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const m: FakeMessage = { ts: nextTs(), user: `U0P${i % 3}`, text: `${ch.id} #${i}` };
    const replies = threads[i] ?? 0;
    if (replies > 0)
      m.replies = Array.from({ length: replies }, (_, r) => ({
        ts: nextTs(),
        user: 'U0R',
        text: `${ch.id} #${i} reply ${r}`,
        thread_ts: m.ts,
      }));
    ch.messages.push(m);
    ids.push(`message:${ch.id}:${m.ts}`, ...(m.replies ?? []).map((r) => `message:${ch.id}:${r.ts}`));
  }
  return ids;
}

async function node(
  slack: FakeSlack,
  extra: Record<string, string> = {},
  logs?: LogCapture,
  resumeSweepMs?: number,
): Promise<TestNode> {
  const n = await startTestNode(chatEnv(slack, extra), undefined, {
    logs,
    ...(resumeSweepMs === undefined ? {} : { resumeSweepMs }),
  });
  slack.eventsUrl = `${n.url}${EVENTS_PATH}`;
  return n;
}

const installOf = async (url: string, tenant: Tenant, id: string) =>
  json(await fetch(`${url}/api/v1/connectors/installs/${id}`, { headers: tenant.auth }));
const backfillDone = (url: string, tenant: Tenant, id: string, timeoutMs = 15_000) =>
  until(
    'backfill complete',
    async () => {
      const i = await installOf(url, tenant, id);
      return i.backfill.state === 'complete' ? i.backfill : undefined;
    },
    { timeoutMs: timeoutMs },
  );

describe('chatapp backfill', () => {
  it('walks channels, history pages and threads; killed mid-way, it resumes on another node and ends with every message exactly once', async () => {
    const slack = await new FakeSlack().start();
    cleanups.push(() => slack.close());
    const team = slack.addTeam();
    const pub = slack.addChannel(team.id, { type: 'channel', name: 'general' });
    const priv = slack.addChannel(team.id, { type: 'group', name: 'secret' });
    const dm = slack.addChannel(team.id, { type: 'im' });
    const gdm = slack.addChannel(team.id, { type: 'mpim', name: 'mpdm-a--b--c' });
    const outside = slack.addChannel(team.id, { type: 'channel', member: false });
    const kicked = slack.addChannel(team.id, { type: 'channel', historyError: 'not_in_channel' });
    fill(outside, 5);
    fill(kicked, 5);
    const expected = [
      ...fill(pub, 40, { 3: 20, 30: 3 }),
      ...fill(priv, 20, { 0: 16 }),
      ...fill(dm, 5),
      ...fill(gdm, 7, { 6: 2 }),
    ];

    // Node A runs in its own process, so it can be killed for real (SIGKILL: no stop hooks, no passivation).
    const namespace = freshNamespace('chatbf');
    const pool = createPool(testDatabaseUrl(), { max: 2 });
    cleanups.push(() => pool.end());
    const a = await startNodeProcess({
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: '4',
      SERVICE_LEASE_TTL_S: '3',
      PORT: '0',
      LOG_LEVEL: 'warn',
      ...chatEnv(slack),
    });
    cleanups.push(() => a.kill());
    slack.eventsUrl = `${a.url}${EVENTS_PATH}`;
    const t = await createTenant(pool, TEST_MASTER_KEY, 'backfill');
    const tenant: Tenant = { ...t, auth: { authorization: `Bearer ${t.api_key}` } };
    const { install_id } = await installOk({ slack, node: { url: a.url } } as ChatStack, tenant, team.id);
    // A live event for a message the walk will also find: one event, not two (same id).
    const newest = pub.messages.at(-1)!;
    expect((await slack.deliver(team.id, messageEvent(team, pub, newest))).status).toBe(200);

    // Kill the node while a history call is in flight.
    await until('three history pages', async () => slack.callsOf('conversations.history').length >= 3, {
      timeoutMs: 10_000,
    });
    const stall = slack.stall('conversations.history');
    await stall.reached;
    const progressBefore = (await installOf(a.url, tenant, install_id)).backfill;
    expect(progressBefore.state).toBe('running');
    // What A published is stored before it dies (an unacked delivery would only come back after the
    // stream's ack wait, which is the runtime's business, not this walk's).
    await until(
      'ingest caught up',
      async () =>
        (await allEvents(a.url, tenant, install_id)).filter((e) => e.kind === 'message').length >=
        progressBefore.messages + progressBefore.replies,
      { timeoutMs: 10_000 },
    );
    await a.kill();
    stall.release();

    // Node B takes the shards over once A's leases expire, and resumes the walk from its cursor.
    const bLogs = new LogCapture();
    // A resume that fails at acquisition (a loaded machine) is repeated by the sweep.
    const b = await node(slack, { SERVICE_NAMESPACE: namespace }, bLogs, 3_000);
    // Stopped when this test ends: the database is shared with the next tests, and a live node
    // resumes every unfinished walk whose key hashes to a shard it holds, theirs too.
    let bStopped: Promise<void> | null = null;
    const stopB = () => (bStopped ??= b.stop());
    cleanups.push(stopB);
    let last: unknown = null;
    const done = await until(
      'backfill complete',
      async () => {
        const i = await installOf(b.url, tenant, install_id);
        last = i.backfill;
        return i.backfill.state === 'complete' ? i.backfill : undefined;
      },
      { timeoutMs: 25_000 },
    ).catch((err: unknown) => {
      // What the walk had reached, and what B said about it, name the stuck step.
      const said = bLogs.lines.filter((l) => l.level >= LOG_LEVEL.info).map((l) => JSON.stringify(l));
      throw new Error(`${String(err)}; backfill ${JSON.stringify(last)}; node B logged:\n${said.join('\n')}`);
    });

    const events = await until(
      'all messages ingested',
      async () => {
        const evs = (await allEvents(b.url, tenant, install_id)).filter((e) => e.kind === 'message');
        return evs.length >= expected.length ? evs : undefined;
      },
      { timeoutMs: 10_000 },
    );
    // The walk published everything before it said complete, and an install's events are stored in the
    // order they were published: once a live event sent now is in, nothing of the walk is still to come.
    const later: FakeMessage = { ts: nextTs(), user: 'U0LATE', text: 'after the walk' };
    expect((await slack.deliver(team.id, messageEvent(team, pub, later))).status).toBe(200);
    const laterId = `message:${pub.id}:${later.ts}`;
    await until('a live event after the walk', async () =>
      (await allEvents(b.url, tenant, install_id)).some((e) => e.id === laterId),
    );
    const ids = (await allEvents(b.url, tenant, install_id))
      .filter((e) => e.kind === 'message' && e.id !== laterId)
      .map((e) => e.id);
    expect(ids.length).toBe(expected.length);
    expect(new Set(ids)).toEqual(new Set(expected));
    expect(events.find((e) => e.id === `message:${gdm.id}:${gdm.messages[0]!.ts}`)!.payload.channel_type).toBe('mpim');

    // INTERFACE §8.21: the kicked channel is skipped and listed; the walk still completes.
    expect(done).toMatchObject({
      skipped_count: 1,
      skipped_channels: [{ channel_id: kicked.id, reason: 'not_in_channel' }],
      group_dms_excluded: false,
    });
    // The channel the bot was never in costs no history call.
    expect(slack.callsOf('conversations.history').filter((c) => c.params.channel === outside.id)).toEqual([]);
    // INTERFACE §8.16 non_marketplace: limit 15, and (divided by 1000 here) one call per 60 ms
    // per method, across the restart.
    const history = slack.callsOf('conversations.history');
    expect(new Set(history.map((c) => c.params.limit))).toEqual(new Set(['15']));
    for (let i = 1; i < history.length; i++) expect(history[i]!.at - history[i - 1]!.at).toBeGreaterThanOrEqual(55);
    const replies = slack.callsOf('conversations.replies');
    for (let i = 1; i < replies.length; i++) expect(replies[i]!.at - replies[i - 1]!.at).toBeGreaterThanOrEqual(55);
    // B resumed from A's cursor: no page was fetched twice except the one A died in the middle of.
    const pages = [...history, ...replies]
      .filter((c) => c.status === 200)
      .map((c) => `${c.method}|${c.params.channel}|${c.params.ts ?? ''}|${c.params.cursor ?? ''}`);
    expect(pages.length - new Set(pages).size).toBeLessThanOrEqual(1);
    // A thread of 20 replies at limit 15 took two pages.
    expect(replies.filter((c) => c.params.ts === pub.messages[3]!.ts)).toHaveLength(2);
    // Newest history first (spec §1, backfill-walk.ts): the walk stored the channel's top-level
    // messages from its newest back to its oldest, page after page and within each page.
    // (The listing is newest-stored first, so it shows them reversed.)
    const pubTop = pub.messages.map((m) => `message:${pub.id}:${m.ts}`);
    const storedOrder = ids.filter((id) => pubTop.includes(id)).reverse();
    expect(storedOrder).toEqual([...pubTop].reverse());
    await stopB();
    // A second process, a lease expiry and a takeover: generous on a loaded 2-core machine.
  }, 60_000);

  it('leaves group DMs out without mpim:history, honours a 429 with its Retry-After, and paces marketplace apps at limit 200', async () => {
    const slack = await new FakeSlack().start();
    cleanups.push(() => slack.close());
    const scopes = [
      'channels:history',
      'channels:read',
      'groups:history',
      'groups:read',
      'im:history',
      'im:read',
      'mpim:read',
      'chat:write',
    ];
    const team = slack.addTeam({ scopes });
    const pub = slack.addChannel(team.id, { type: 'channel' });
    const gdm = slack.addChannel(team.id, { type: 'mpim' });
    const expected = fill(pub, 30, { 2: 4 });
    fill(gdm, 6);
    slack.rateLimit('conversations.history', 1, 1);

    const logs = new LogCapture();
    const n = await node(slack, { CHATAPP_APP_TIER: 'marketplace' }, logs);
    cleanups.push(() => n.stop());
    const tenant = await n.tenant();
    const { install_id } = await installOk({ slack, node: n } as ChatStack, tenant, team.id);
    // spec §6.1 rule 2: the missing scope is logged at install time, once, for this install.
    const warned = logs.find('mpim:history', LOG_LEVEL.warn);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ installId: install_id, teamId: team.id });
    const done = await backfillDone(n.url, tenant, install_id);
    expect(done.group_dms_excluded).toBe(true);
    expect(slack.callsOf('conversations.list').map((c) => c.params.types)).toEqual([
      'public_channel,private_channel,im',
    ]);
    const history = slack.callsOf('conversations.history');
    expect(history[0]!.status).toBe(429);
    expect(history[1]!.at - history[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(history.slice(1).every((c) => c.params.limit === '200')).toBe(true);
    expect(history.some((c) => c.params.channel === gdm.id)).toBe(false);
    const ids = await until(
      'every expected message event stored',
      async () => {
        const evs = (await allEvents(n.url, tenant, install_id)).filter((e) => e.kind === 'message').map((e) => e.id);
        return evs.length >= expected.length ? evs : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(new Set(ids)).toEqual(new Set(expected));
  });

  it('drops our own messages on the backfill path too: bot-authored (tier 1) and posted by this install (tier 2)', async () => {
    const slack = await new FakeSlack().start();
    cleanups.push(() => slack.close());
    const team = slack.addTeam();
    const ch = slack.addChannel(team.id, { type: 'channel' });
    const humans = fill(ch, 4, { 1: 2 });
    // INTERFACE §8.23: ours by bot_id, by app_id, by the bot user, and a reply of ours in a thread.
    const ours: FakeMessage[] = [
      { ts: nextTs(), bot_id: team.botId, subtype: 'bot_message', text: 'ours by bot_id' },
      { ts: nextTs(), app_id: slack.appId, user: 'U0SOMEONE', text: 'ours by app_id' },
      { ts: nextTs(), user: team.botUserId, text: 'ours by bot user' },
    ];
    ch.messages.push(...ours);
    const thread = ch.messages[1]!;
    const ourReply: FakeMessage = {
      ts: nextTs(),
      user: team.botUserId,
      text: 'ours in a thread',
      thread_ts: thread.ts,
    };
    thread.replies!.push(ourReply);

    const n = await node(slack);
    cleanups.push(() => n.stop());
    const tenant = await n.tenant();
    // Hold the walk at its first history page until this install has posted into the channel.
    const stall = slack.stall('conversations.history');
    const { install_id } = await installOk({ slack, node: n } as ChatStack, tenant, team.id);
    await stall.reached;
    const res = await emit(n.url, tenant, install_id, 'chatapp.message', {
      channel_id: ch.id,
      text: 'posted by the graph',
    });
    expect(res.status).toBe(200);
    const postedTs = (await json(res)).provider_id as string;
    // Tier 2 alone: in history our post shows up re-attributed to a person (a mirror tool), author fields gone.
    const mirrored = ch.messages.find((m) => m.ts === postedTs)!;
    delete mirrored.bot_id;
    delete mirrored.app_id;
    mirrored.user = 'U0MIRROR';
    stall.release();

    await backfillDone(n.url, tenant, install_id);
    const dropped = (tier: string) =>
      scrapeSample(n.url, 'connector_service_ingest_dropped_total', { connector: 'chatapp', tier });
    await until('drops counted', async () => (await dropped('1')) >= 4 && (await dropped('2')) >= 1, {
      timeoutMs: 10_000,
    });
    const ids = await until(
      'human messages ingested',
      async () => {
        const evs = (await allEvents(n.url, tenant, install_id)).filter((e) => e.kind === 'message').map((e) => e.id);
        return evs.length >= humans.length ? evs : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(new Set(ids)).toEqual(new Set(humans));
    for (const m of [...ours, ourReply, mirrored]) expect(ids).not.toContain(`message:${ch.id}:${m.ts}`);
    // INTERFACE §8.20: each drop counted once, by tier.
    expect(await dropped('1')).toBe(4);
    expect(await dropped('2')).toBe(1);
  });
});
