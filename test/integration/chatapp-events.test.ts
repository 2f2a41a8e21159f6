/** Chat events in over HTTP (spec §6.1, §6.3; INTERFACE §3, §4, §8.20). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  reactionEvent,
  signedHeaders,
} from 'connector-service/testing';
import {
  allEvents,
  emit,
  installOk,
  json,
  startChatStack,
  type ChatStack,
  type Tenant,
} from '../support/slack-harness.js';
import { nextTs, type FakeChannel, type FakeMessage, type FakeTeam } from 'connector-service/testing';
import { scrapeSample } from '../support/metrics.js';
import { until } from '../support/until.js';

let s: ChatStack;
let team: FakeTeam;
let tenant: Tenant;
let installId: string;
const ch: Record<'channel' | 'group' | 'im' | 'mpim', FakeChannel> = {} as never;

beforeAll(async () => {
  s = await startChatStack();
  team = s.slack.addTeam();
  for (const type of ['channel', 'group', 'im', 'mpim'] as const) ch[type] = s.slack.addChannel(team.id, { type });
  tenant = await s.node.tenant();
  installId = (await installOk(s, tenant, team.id)).install_id;
  // Let the backfill of this (empty) workspace end first: its ids must not shadow the echoes below.
  await until(
    'backfill complete',
    async () => {
      const r = await fetch(`${s.node.url}/api/v1/connectors/installs/${installId}`, { headers: tenant.auth });
      return (await json(r)).backfill.state === 'complete';
    },
    { timeoutMs: 10_000 },
  );
});
afterAll(() => s?.stop());

const userMessage = (c: FakeChannel, text: string, extra: Partial<FakeMessage> = {}): FakeMessage => {
  const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text, ...extra };
  c.messages.push(m);
  return m;
};
const events = () => allEvents(s.node.url, tenant, installId);
const eventById = async (id: string) => (await events()).find((e) => e.id === id);
const waitFor = (id: string) => until(`event ${id} stored`, () => eventById(id), { timeoutMs: 10_000 });

describe('chatapp events over HTTP', () => {
  it('answers url_verification with the challenge (signed)', async () => {
    const body = JSON.stringify({ token: 'x', challenge: 'ch4ll3nge', type: 'url_verification' });
    const res = await fetch(s.slack.eventsUrl!, {
      method: 'POST',
      headers: signedHeaders(s.slack.signingSecret, body, 'valid'),
      body,
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ challenge: 'ch4ll3nge' });
    const forged = await fetch(s.slack.eventsUrl!, {
      method: 'POST',
      headers: signedHeaders(s.slack.signingSecret, body, 'forged'),
      body,
    });
    expect(forged.status).toBe(401);
  });

  it('refuses forged, stale, future and unsigned deliveries with 401, and publishes none of them', async () => {
    const bad: string[] = [];
    for (const signing of ['forged', 'stale', 'future', 'missing'] as const) {
      // Not stored in the fake workspace, so the backfill walk cannot bring it in either.
      const m: FakeMessage = { ts: nextTs(), user: 'U0HUMAN', text: `bad ${signing}` };
      bad.push(`message:${ch.channel.id}:${m.ts}`);
      const res = await s.slack.deliver(team.id, messageEvent(team, ch.channel, m), { signing });
      expect(res.status).toBe(401);
      expect((await json(res)).error.code).toBe('unauthorized');
    }
    const good = userMessage(ch.channel, 'good');
    expect((await s.slack.deliver(team.id, messageEvent(team, ch.channel, good))).status).toBe(200);
    await waitFor(`message:${ch.channel.id}:${good.ts}`);
    const ids = new Set((await events()).map((e) => e.id));
    for (const id of bad) expect(ids.has(id)).toBe(false);
  });

  it('ingests messages of channels, private channels, DMs and group DMs, with file references', async () => {
    const file = {
      id: 'F0FILE',
      name: 'plan.pdf',
      mimetype: 'application/pdf',
      size: 1234,
      permalink: 'https://files.example/plan',
    };
    const sent = (['channel', 'group', 'im', 'mpim'] as const).map((type) => ({
      type,
      m: userMessage(ch[type], `hello ${type}`, type === 'group' ? { files: [file] } : {}),
    }));
    for (const { type, m } of sent)
      expect((await s.slack.deliver(team.id, messageEvent(team, ch[type], m))).status).toBe(200);
    for (const { type, m } of sent) {
      const e = await waitFor(`message:${ch[type].id}:${m.ts}`);
      expect(e.kind).toBe('message');
      expect(e.payload).toMatchObject({
        channel_id: ch[type].id,
        channel_type: type,
        ts: m.ts,
        user: 'U0HUMAN',
        text: `hello ${type}`,
      });
      expect(e.occurred_at).toBe(new Date(Number(m.ts.split('.')[0]) * 1000).toISOString());
    }
    const withFile = await eventById(`message:${ch.group.id}:${sent[1]!.m.ts}`);
    expect(withFile!.payload.files).toEqual([
      {
        file_id: 'F0FILE',
        name: 'plan.pdf',
        mimetype: 'application/pdf',
        size: 1234,
        permalink: 'https://files.example/plan',
      },
    ]);
    expect((await eventById(`message:${ch.channel.id}:${sent[0]!.m.ts}`))!.payload.files).toBeUndefined();
  });

  it('ingests thread replies, edits, deletes and reactions with the INTERFACE ids and payloads', async () => {
    const parent = userMessage(ch.channel, 'parent');
    const reply: FakeMessage = { ts: nextTs(), user: 'U0OTHER', text: 'reply', thread_ts: parent.ts };
    const editTs = nextTs();
    const deleteTs = nextTs();
    const reactTs = nextTs();
    const unreactTs = nextTs();
    const c = ch.channel.id;
    await s.slack.deliver(team.id, messageEvent(team, ch.channel, reply));
    // Read before its deletion is delivered: a deleted message's text is forgotten from the
    // stored event too (INTERFACE §10.5), so a read after it would race the deletion.
    expect((await waitFor(`message:${c}:${reply.ts}`)).payload).toMatchObject({ thread_ts: parent.ts, text: 'reply' });
    await s.slack.deliver(team.id, messageChangedEvent(ch.channel, parent, 'parent, edited', editTs));
    await s.slack.deliver(team.id, messageDeletedEvent(ch.channel, reply, deleteTs));
    await s.slack.deliver(
      team.id,
      reactionEvent('reaction_added', ch.channel, parent.ts, 'U0OTHER', 'tada', reactTs, 'U0HUMAN'),
    );
    await s.slack.deliver(
      team.id,
      reactionEvent('reaction_removed', ch.channel, parent.ts, 'U0OTHER', 'tada', unreactTs),
    );
    expect((await waitFor(`message_changed:${c}:${parent.ts}:${editTs}`)).payload).toEqual({
      channel_id: c,
      channel_type: 'channel',
      ts: parent.ts,
      event_ts: editTs,
      text: 'parent, edited',
      user: 'U0HUMAN',
    });
    expect((await waitFor(`message_deleted:${c}:${reply.ts}:${deleteTs}`)).payload).toEqual({
      channel_id: c,
      channel_type: 'channel',
      ts: reply.ts,
      event_ts: deleteTs,
    });
    expect((await waitFor(`reaction_added:${c}:${parent.ts}:U0OTHER:tada:${reactTs}`)).payload).toEqual({
      channel_id: c,
      item_ts: parent.ts,
      user: 'U0OTHER',
      name: 'tada',
      event_ts: reactTs,
      item_user: 'U0HUMAN',
    });
    expect((await waitFor(`reaction_removed:${c}:${parent.ts}:U0OTHER:tada:${unreactTs}`)).kind).toBe(
      'reaction_removed',
    );
  });

  it('ingests a retry storm (each event 4 times, with X-Slack-Retry-Num) exactly once', async () => {
    const msgs = Array.from({ length: 5 }, (_, i) => userMessage(ch.im, `storm ${i}`));
    const deliveries = msgs.flatMap((m, i) =>
      [0, 1, 2, 3].map((retryNum) =>
        s.slack.deliver(team.id, messageEvent(team, ch.im, m), { eventId: `EvSTORM${i}`, retryNum }),
      ),
    );
    const answers = await Promise.all(deliveries);
    for (const a of answers) expect(a.status).toBe(200);
    for (const m of msgs) await waitFor(`message:${ch.im.id}:${m.ts}`);
    // A redelivery past the dedup key (a new event_id, same message) is still one event.
    await s.slack.deliver(team.id, messageEvent(team, ch.im, msgs[0]!), { eventId: 'EvLATERETRY', retryNum: 3 });
    // An install's events are stored in the order they were accepted: once a later one is in, the redelivery was handled.
    const later = userMessage(ch.im, 'after the storm');
    expect((await s.slack.deliver(team.id, messageEvent(team, ch.im, later))).status).toBe(200);
    await waitFor(`message:${ch.im.id}:${later.ts}`);
    const stormIds = (await events()).filter((e) => e.payload.text?.toString().startsWith('storm ')).map((e) => e.id);
    expect(stormIds.sort()).toEqual(msgs.map((m) => `message:${ch.im.id}:${m.ts}`).sort());
  });

  it('acknowledges and drops events of a team with no active install', async () => {
    const stranger = s.slack.addTeam();
    const c = s.slack.addChannel(stranger.id);
    const m: FakeMessage = { ts: nextTs(), user: 'U0X', text: 'nobody home' };
    expect((await s.slack.deliver(stranger.id, messageEvent(stranger, c, m))).status).toBe(200);
    const { rows } = await s.node.pool.query(
      `SELECT count(*)::int AS n FROM events WHERE payload->>'text' = 'nobody home'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('never ingests our own posted message echoed back (tier 1), nor a mirror of it without author fields (tier 2)', async () => {
    const droppedSoFar = (tier: string) =>
      scrapeSample(s.node.url, 'connector_service_ingest_dropped_total', { connector: 'chatapp', tier });
    const before = { tier1: await droppedSoFar('1'), tier2: await droppedSoFar('2') };
    // Tier 2 alone: a mirror tool re-posts our message with the author fields stripped and a human's user id.
    const first = await emit(s.node.url, tenant, installId, 'chatapp.message', {
      channel_id: ch.channel.id,
      text: 'mirrored',
    });
    expect(first.status).toBe(200);
    const mirroredTs = (await json(first)).provider_id as string;
    const mirror = {
      type: 'message',
      channel: ch.channel.id,
      channel_type: 'channel',
      user: 'U0MIRROR',
      text: 'mirrored',
      ts: mirroredTs,
      event_ts: mirroredTs,
    };
    expect((await s.slack.deliver(team.id, mirror)).status).toBe(200);

    s.slack.echo = 'http';
    try {
      // Another channel: this one's bucket allows one post per second.
      const res = await emit(s.node.url, tenant, installId, 'chatapp.message', {
        channel_id: ch.group.id,
        text: 'from the graph',
      });
      expect(res.status).toBe(200);
      const { provider_id: ts } = await json(res);
      // Our own reaction comes back authored by the bot user.
      expect(
        (
          await s.slack.deliver(
            team.id,
            reactionEvent('reaction_added', ch.group, ts, team.botUserId, 'eyes', nextTs()),
          )
        ).status,
      ).toBe(200);
      // Tier 1 alone: bot-authored messages this install has no emitted record of (by bot_id, by app_id, by bot user).
      const byBot = [
        { bot_id: team.botId, subtype: 'bot_message' },
        { app_id: s.slack.appId, user: 'U0SOMEONE' },
        { user: team.botUserId },
      ].map((author) => ({
        type: 'message',
        channel: ch.channel.id,
        channel_type: 'channel',
        text: 'ours, posted elsewhere',
        ts: nextTs(),
        ...author,
      }));
      for (const e of byBot) expect((await s.slack.deliver(team.id, e)).status).toBe(200);
      // A human's message sent after them all is ingested: the drop above is not an outage.
      const control = userMessage(ch.channel, 'human after echo');
      await s.slack.deliver(team.id, messageEvent(team, ch.channel, control));
      await waitFor(`message:${ch.channel.id}:${control.ts}`);
      const all = await events();
      expect(all.filter((e) => [ts, mirroredTs].includes(e.payload.ts as string) || e.payload.item_ts === ts)).toEqual(
        [],
      );
      expect(all.filter((e) => e.payload.text === 'ours, posted elsewhere')).toEqual([]);
      expect(s.slack.posted.some((p) => p.ts === ts)).toBe(true);
      // INTERFACE §8.20: every drop is counted, by tier: the echo, our reaction and the three
      // bot-authored messages (tier 1), the mirror (tier 2). The echo travels on its own, so wait for it.
      await until('tier-1 drops counted', async () => (await droppedSoFar('1')) - before.tier1 >= 5, {
        timeoutMs: 10_000,
      });
      expect((await droppedSoFar('1')) - before.tier1).toBe(5);
      expect((await droppedSoFar('2')) - before.tier2).toBe(1);
    } finally {
      s.slack.echo = null;
    }
  });
});
