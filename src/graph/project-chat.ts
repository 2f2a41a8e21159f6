/**
 * Chat events → graph (INTERFACE §4 payloads, §5 kinds). The workspace's team id is the
 * install's external id. Channels, users, messages (edits replace `text`, deletes set
 * `deleted`), thread replies (`reply_to` the thread's parent), reactions (`reacted`
 * user → message, one edge per reaction name, removed by `reaction_removed`) and the file
 * references of a message (`props.files`; bytes are never fetched, spec §8).
 */
import { z } from 'zod';
import type { IngestEvent } from '../runtime/ports.js';
import type { NodeRef, ProjectOutcome } from './graph-write.js';
import type { GraphWriter } from './graph-writer.js';
import { slackTsMicros, timeMicros, versionAt, type Version } from './version.js';

const Ts = z.string().refine((s) => slackTsMicros(s) !== null, 'not a Slack timestamp');
const Id = z.string().min(1).max(255);

// spec §2.2: file references are {file_id, name, mimetype, size, permalink}.
const File = z.object({
  file_id: z.string(),
  name: z.string().nullish(),
  mimetype: z.string().nullish(),
  size: z.number().nullish(),
  permalink: z.string().nullish(),
});

const Message = z.object({
  channel_id: Id,
  channel_type: z.string().nullish(),
  ts: Ts,
  thread_ts: Ts.nullish(),
  user: Id.nullish(),
  bot_id: z.string().nullish(),
  subtype: z.string().nullish(),
  text: z.string().nullish(),
  files: z.array(File).nullish(),
  // Present when a backfilled message was edited: its text is as of that edit.
  edited: z.object({ ts: Ts }).nullish(),
  // INTERFACE §9.5: who reacted with what, as the platform's message said.
  reactions: z.array(z.object({ name: z.string().min(1).max(255), users: z.array(Id) })).nullish(),
});

const MessageChanged = z.object({
  channel_id: Id,
  channel_type: z.string().nullish(),
  ts: Ts,
  event_ts: Ts,
  text: z.string().nullish(),
  user: Id.nullish(),
  files: z.array(File).nullish(),
});

const MessageDeleted = z.object({ channel_id: Id, channel_type: z.string().nullish(), ts: Ts, event_ts: Ts });

const Reaction = z.object({
  channel_id: Id,
  item_ts: Ts,
  user: Id,
  name: z.string().min(1).max(255),
  event_ts: Ts,
  item_user: Id.nullish(),
});

// INTERFACE §9.5: names, from listings, lookups and live channel/user events (normalize-names.ts).
const ChannelInfo = z.object({
  channel_id: Id,
  name: z.string().nullish(),
  is_private: z.boolean().nullish(),
  is_im: z.boolean().nullish(),
  is_mpim: z.boolean().nullish(),
  is_archived: z.boolean().nullish(),
  as_of: z.string().nullish(),
});

const UserInfo = z.object({
  user_id: Id,
  name: z.string().nullish(),
  real_name: z.string().nullish(),
  is_bot: z.boolean().nullish(),
  deleted: z.boolean().nullish(),
  as_of: z.string().nullish(),
});

/** Rank of a deletion among facts of one instant (version.ts). */
const DELETE_RANK = 1;

export async function projectChat(w: GraphWriter, teamId: string, event: IngestEvent): Promise<ProjectOutcome> {
  const at = (ts: string, rank = 0): Version => versionAt(slackTsMicros(ts)!, rank, event.id);
  // Facts the platform gave no time for rank below any dated one (a live rename wins).
  const asOf = (t: string | null | undefined): Version => versionAt(timeMicros(t) ?? 1n, 0, event.id);
  const ids = chatIds(teamId);

  const channel = (channelId: string, channelType: string | null | undefined, v: Version) =>
    w.node('chat.channel', ids.channel(channelId), {
      identity: { channel_id: channelId },
      props: { channel_type: channelType ?? undefined },
      version: v,
    });
  const user = (userId: string) => w.node('chat.user', ids.user(userId), { identity: { user_id: userId } });
  // A message named by another event (a reply's parent, a reacted message) gets the
  // coordinates its identity gives, so it can be acted on before its own event arrives.
  const message = async (channelId: string, ts: string, ch: NodeRef, props?: Record<string, unknown>, v?: Version) => {
    const ref = await w.node('chat.message', ids.message(channelId, ts), {
      identity: { channel_id: channelId, ts },
      props,
      version: v,
    });
    await w.edge('in_channel', ref, ch);
    return ref;
  };

  switch (event.kind) {
    case 'message': {
      const p = Message.safeParse(event.payload);
      if (!p.success) return 'invalid';
      const m = p.data;
      const v = at(m.edited?.ts ?? m.ts);
      const ch = await channel(m.channel_id, m.channel_type, v);
      const threadTs = m.thread_ts ?? null;
      const msg = await message(
        m.channel_id,
        m.ts,
        ch,
        {
          text: m.text ?? '',
          user: m.user ?? null,
          thread_ts: threadTs,
          channel_type: m.channel_type ?? undefined,
          files: m.files ? m.files.map(fileRef) : undefined,
          bot_id: m.bot_id ?? undefined,
          subtype: m.subtype ?? undefined,
        },
        v,
      );
      if (m.user) await w.edge('authored_by', msg, await user(m.user));
      // A thread's parent carries thread_ts == ts; only replies point at it.
      if (threadTs && threadTs !== m.ts) await w.edge('reply_to', msg, await message(m.channel_id, threadTs, ch));
      // At the message's own version: any live reaction_added/removed (its event_ts is
      // later) outranks this snapshot, so a removal seen live is never undone by history.
      for (const r of m.reactions ?? []) {
        for (const u of new Set(r.users)) {
          await w.edge('reacted', await user(u), msg, { key: r.name, props: { name: r.name }, version: v });
        }
      }
      return 'projected';
    }
    case 'message_changed': {
      const p = MessageChanged.safeParse(event.payload);
      if (!p.success) return 'invalid';
      const m = p.data;
      const v = at(m.event_ts);
      const ch = await channel(m.channel_id, m.channel_type, v);
      const msg = await message(
        m.channel_id,
        m.ts,
        ch,
        { text: m.text ?? '', files: m.files ? m.files.map(fileRef) : undefined, edited_ts: m.event_ts },
        v,
      );
      if (m.user) await w.edge('authored_by', msg, await user(m.user));
      return 'projected';
    }
    case 'message_deleted': {
      const p = MessageDeleted.safeParse(event.payload);
      if (!p.success) return 'invalid';
      const m = p.data;
      const v = at(m.event_ts, DELETE_RANK);
      const ch = await channel(m.channel_id, m.channel_type, v);
      // The node stays (edges, thread replies); its content goes, as it did upstream.
      await message(m.channel_id, m.ts, ch, { deleted: true, text: null, files: null }, v);
      return 'projected';
    }
    case 'reaction_added':
    case 'reaction_removed': {
      const p = Reaction.safeParse(event.payload);
      if (!p.success) return 'invalid';
      const r = p.data;
      const ch = await w.node('chat.channel', ids.channel(r.channel_id), { identity: { channel_id: r.channel_id } });
      const msg = await message(r.channel_id, r.item_ts, ch);
      if (r.item_user) await w.edge('authored_by', msg, await user(r.item_user));
      await w.edge('reacted', await user(r.user), msg, {
        key: r.name,
        props: { name: r.name },
        version: at(r.event_ts),
        removed: event.kind === 'reaction_removed',
      });
      return 'projected';
    }
    case 'channel_info': {
      const p = ChannelInfo.safeParse(event.payload);
      if (!p.success) return 'invalid';
      const c = p.data;
      await w.node('chat.channel', ids.channel(c.channel_id), {
        identity: { channel_id: c.channel_id },
        props: {
          name: c.name ?? undefined,
          is_private: c.is_private ?? undefined,
          is_im: c.is_im ?? undefined,
          is_mpim: c.is_mpim ?? undefined,
          is_archived: c.is_archived ?? undefined,
        },
        version: asOf(c.as_of),
      });
      return 'projected';
    }
    case 'user_info': {
      const p = UserInfo.safeParse(event.payload);
      if (!p.success) return 'invalid';
      const u = p.data;
      await w.node('chat.user', ids.user(u.user_id), {
        identity: { user_id: u.user_id },
        props: {
          name: u.name ?? undefined,
          real_name: u.real_name ?? undefined,
          is_bot: u.is_bot ?? undefined,
          // Not `deleted`: that marks a node removed from the graph; a deactivated user still is one.
          is_deleted: u.deleted ?? undefined,
        },
        version: asOf(u.as_of),
      });
      return 'projected';
    }
    default:
      return 'unknown';
  }
}

export function chatIds(teamId: string) {
  return {
    channel: (channelId: string) => `${teamId}:${channelId}`,
    user: (userId: string) => `${teamId}:${userId}`,
    message: (channelId: string, ts: string) => `${teamId}:${channelId}:${ts}`,
  };
}

function fileRef(f: z.infer<typeof File>) {
  return {
    file_id: f.file_id,
    name: f.name ?? null,
    mimetype: f.mimetype ?? null,
    size: f.size ?? null,
    permalink: f.permalink ?? null,
  };
}
