/**
 * INTERFACE §9.5 on the chat side, projected into a real Postgres: history's reactions
 * become `reacted` edges that live reaction events order against; replaying the whole log
 * on top changes no row; channel and user names from listings, lookups and live events
 * order by their upstream time whatever order they arrive in.
 */
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelInfoEvent, namesFromSlackEvent, userInfoEvent } from '../../src/connectors/chatapp/normalize-names.js';
import { listNodes } from '../../src/graph/queries.js';
import { createPool } from '../../src/store/db.js';
import { testDatabaseUrl } from '../support/env.js';
import { graphDb, type RawEvent } from '../support/graph-db.js';

let pool: Pool;
let g: ReturnType<typeof graphDb>;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  g = graphDb(pool);
});
afterAll(() => pool.end());

const TEAM = 'T0NAMES';
const MSG_TS = '1700000100.000100';

/** A backfilled message that had two reactions when history was read. */
const historyMessage: RawEvent = {
  id: `message:C1:${MSG_TS}`,
  kind: 'message',
  payload: {
    channel_id: 'C1',
    channel_type: 'channel',
    ts: MSG_TS,
    user: 'U1',
    text: 'Release notes are up',
    reactions: [
      { name: 'tada', users: ['U2', 'U3'] },
      { name: 'eyes', users: ['U2'] },
    ],
  },
};

const reaction = (type: 'reaction_added' | 'reaction_removed', user: string, name: string, eventTs: string) => ({
  id: `${type}:C1:${MSG_TS}:${user}:${name}:${eventTs}`,
  kind: type,
  payload: { channel_id: 'C1', item_ts: MSG_TS, user, name, event_ts: eventTs, item_user: 'U1' },
});

async function reactions(tenantId: string) {
  const msg = (await g.nodeOf(tenantId, 'chat.message', `${TEAM}:C1:${MSG_TS}`))!;
  return msg.edges
    .filter((e) => e.type === 'reacted')
    .map((e) => `${e.fromName.replace(`chat.user ${TEAM}:`, '')} ${e.props.name}`)
    .sort();
}

describe('graph: reactions from history (INTERFACE §9.5)', () => {
  it('a history message with reactions gives one reacted edge per user and name; replaying it changes nothing', async () => {
    const inst = await g.freshInstall('chatapp', TEAM);
    await g.project(inst, historyMessage);
    expect(await reactions(inst.tenant_id)).toEqual(['U2 eyes', 'U2 tada', 'U3 tada']);
    const before = await g.rawTables(inst.tenant_id);
    await g.project(inst, historyMessage);
    expect(await g.rawTables(inst.tenant_id)).toEqual(before);
  });

  it('a live removal after the message wins over the history snapshot, in either order; replay-twice identical', async () => {
    const log: RawEvent[] = [
      historyMessage,
      reaction('reaction_removed', 'U3', 'tada', '1700000200.000000'),
      reaction('reaction_added', 'U4', 'rocket', '1700000150.000000'),
    ];
    const [a, b] = [await g.freshInstall('chatapp', TEAM), await g.freshInstall('chatapp', TEAM)];
    await g.projectAll(a, log);
    await g.projectAll(b, [...log].reverse());
    expect(await g.snapshot(b.tenant_id)).toEqual(await g.snapshot(a.tenant_id));
    expect(await reactions(a.tenant_id)).toEqual(['U2 eyes', 'U2 tada', 'U4 rocket']);
    const before = await g.rawTables(a.tenant_id);
    await g.projectAll(a, log);
    expect(await g.rawTables(a.tenant_id)).toEqual(before);
  });
});

const draft = (d: ReturnType<typeof channelInfoEvent>): RawEvent => ({ id: d!.id, kind: d!.kind, payload: d!.payload });

describe('graph: names of channels and users (INTERFACE §9.5)', () => {
  const listed = draft(
    channelInfoEvent({
      id: 'C1',
      name: 'general',
      is_private: false,
      is_im: false,
      is_mpim: false,
      created: 1_690_000_000,
    }),
  );
  const renamed = draft(
    namesFromSlackEvent({
      type: 'channel_rename',
      channel: { id: 'C1', name: 'announcements' },
      event_ts: '1700000300.000000',
    }),
  );
  const archived = draft(
    namesFromSlackEvent({ type: 'channel_archive', channel: 'C1', user: 'U1', event_ts: '1700000400.000000' }),
  );
  const looked = draft(
    userInfoEvent({ id: 'U1', name: 'ada', real_name: 'Ada Lovelace', is_bot: false, updated: 1_700_000_000 }),
  );
  const changed = draft(
    namesFromSlackEvent({
      type: 'user_change',
      user: { id: 'U1', name: 'ada', real_name: 'Ada King', updated: 1_700_000_500 },
    }),
  );
  const log = [historyMessage, listed, renamed, archived, looked, changed];

  it('the newest fact wins per prop in either order; replaying the log with reactions and names changes no row', async () => {
    const [a, b] = [await g.freshInstall('chatapp', TEAM), await g.freshInstall('chatapp', TEAM)];
    await g.projectAll(a, log);
    await g.projectAll(b, [...log].reverse());
    expect(await g.snapshot(b.tenant_id)).toEqual(await g.snapshot(a.tenant_id));
    const channel = (await g.nodeOf(a.tenant_id, 'chat.channel', `${TEAM}:C1`))!;
    expect(channel.props).toMatchObject({
      name: 'announcements',
      is_private: false,
      is_im: false,
      is_mpim: false,
      is_archived: true,
      channel_type: 'channel',
    });
    const user = (await g.nodeOf(a.tenant_id, 'chat.user', `${TEAM}:U1`))!;
    expect(user.props).toMatchObject({ name: 'ada', real_name: 'Ada King', is_bot: false });
    const before = await g.rawTables(a.tenant_id);
    await g.projectAll(a, log);
    expect(await g.rawTables(a.tenant_id)).toEqual(before);
  });

  it('the same facts read twice are one event; changed facts are another', () => {
    expect(draft(channelInfoEvent({ id: 'C1', name: 'general', created: 1 })).id).toBe(
      draft(channelInfoEvent({ id: 'C1', name: 'general', created: 1 })).id,
    );
    expect(draft(channelInfoEvent({ id: 'C1', name: 'random', created: 1 })).id).not.toBe(listed.id);
  });
});

describe('graph: search in CJK and mixed text (INTERFACE §9.5)', () => {
  it('a 2-character substring of Chinese or Japanese text finds it; mixed queries need both parts; wildcards stay inert', async () => {
    const inst = await g.freshInstall('chatapp', TEAM);
    const texts = ['我们明天部署新版本 deploy tomorrow', '東京でリリースしました', '100% done_ok \\ 部署%'];
    await g.projectMessages(inst, '17000005', texts);
    const found = async (q: string) =>
      (await listNodes(pool, inst.tenant_id, { q, kind: 'chat.message' })).nodes.map((n) => n.props.text).sort();
    expect(await found('部署')).toEqual([texts[0], texts[2]].sort());
    expect(await found('署新')).toEqual([texts[0]]);
    expect(await found('リリース')).toEqual([texts[1]]);
    expect(await found('東京')).toEqual([texts[1]]);
    expect(await found('部署 deploy')).toEqual([texts[0]]);
    expect(await found('deploy 明天')).toEqual([texts[0]]);
    expect(await found('部署 release')).toEqual([]);
    expect(await found('deploying')).toEqual([texts[0]]);
    // User input is never a pattern: `%` and `_` are punctuation (ignored), never wildcards.
    expect(await found('部%')).toEqual(await found('部'));
    expect(await found('明_部')).toEqual([texts[0]]);
    expect(await found('東_')).toEqual([texts[1]]);
    expect(await found('%')).toEqual([]);
    expect(await found('_')).toEqual([]);
  });
});
