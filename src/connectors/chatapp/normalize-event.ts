/**
 * Slack messages and events → the service's chat events (INTERFACE §4): kinds, ids and
 * payloads. Live events and backfilled history share `messageEvent`, so a message has
 * the same id whichever path brings it (one dedup for both, ARCHITECTURE "Inbound" 3).
 * Pure: no I/O.
 */
import { z } from 'zod';
import type { ChannelType, ChatEventDraft } from './chat-event.js';
import { namesFromSlackEvent } from './normalize-names.js';

const TS_PATTERN = /^\d{1,12}\.\d{1,9}$/;
const Ts = z.string().regex(TS_PATTERN);
const Id = z.string().min(1).max(255);
const ChannelTypeSchema = z.enum(['channel', 'group', 'im', 'mpim']);

const SlackFile = z.object({
  id: z.string(),
  name: z.string().nullish(),
  mimetype: z.string().nullish(),
  size: z.number().nullish(),
  permalink: z.string().nullish(),
});

/** A message as Slack sends it in events and in conversations.history / .replies. */
const SlackMessage = z.object({
  ts: Ts,
  thread_ts: Ts.nullish(),
  subtype: z.string().nullish(),
  hidden: z.boolean().nullish(),
  user: Id.nullish(),
  bot_id: z.string().nullish(),
  app_id: z.string().nullish(),
  text: z.string().nullish(),
  files: z.array(z.unknown()).nullish(),
  edited: z.object({ ts: Ts }).nullish(),
  reactions: z.array(z.unknown()).nullish(),
});
type SlackMessage = z.infer<typeof SlackMessage>;

/** Slack `ts` ("1700000000.123456", seconds) as an ISO 8601 UTC string. */
export function tsToIso(ts: string | undefined | null): string | null {
  // The pattern itself, not `Ts.safeParse`: this runs for every live event (issue 12).
  if (!ts || !TS_PATTERN.test(ts)) return null;
  const [s, frac = ''] = ts.split('.');
  const ms = Number(s) * 1000 + Number(`${frac}000`.slice(0, 3));
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** spec §2.2: file references only, `{file_id, name, mimetype, size, permalink}`; bytes are never fetched. */
function fileRefs(files: unknown[] | null | undefined): Array<Record<string, unknown>> | undefined {
  if (!files || files.length === 0) return undefined;
  const refs = files.flatMap((f) => {
    const p = SlackFile.safeParse(f);
    if (!p.success) return [];
    const { id, name, mimetype, size, permalink } = p.data;
    return [
      { file_id: id, name: name ?? null, mimetype: mimetype ?? null, size: size ?? null, permalink: permalink ?? null },
    ];
  });
  return refs.length > 0 ? refs : undefined;
}

const SlackReaction = z.object({ name: z.string().min(1).max(255), users: z.array(Id) });

/**
 * INTERFACE §9.5: a message's reactions as `[{name, users}]` (history included), or
 * undefined when it has none. A malformed entry is left out rather than failing the message.
 */
function reactionsOf(reactions: unknown[] | null | undefined): Array<{ name: string; users: string[] }> | undefined {
  if (!reactions || reactions.length === 0) return undefined;
  const out = reactions.flatMap((r) => {
    const p = SlackReaction.safeParse(r);
    return p.success ? [{ name: p.data.name, users: p.data.users }] : [];
  });
  return out.length > 0 ? out : undefined;
}

/** Copies the fields that are present (Slack omits, never nulls, what does not apply). */
function present(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

/**
 * A `message` event (INTERFACE §4) from a Slack message of a known channel, or null for
 * what is not a message of a conversation: hidden bookkeeping subtypes
 * (`message_replied`...) and malformed input.
 */
export function messageEvent(channelId: string, channelType: ChannelType, raw: unknown): ChatEventDraft | null {
  const p = SlackMessage.safeParse(raw);
  if (!p.success || p.data.hidden) return null;
  const m = p.data;
  return {
    id: `message:${channelId}:${m.ts}`,
    kind: 'message',
    occurredAt: tsToIso(m.ts),
    payload: present({
      channel_id: channelId,
      channel_type: channelType,
      ts: m.ts,
      thread_ts: m.thread_ts,
      user: m.user,
      bot_id: m.bot_id,
      // Not in INTERFACE §4's list, but the Tier-1 filter (§8.23) reads it on every path.
      app_id: m.app_id,
      subtype: m.subtype,
      text: m.text ?? '',
      files: fileRefs(m.files),
      reactions: reactionsOf(m.reactions),
      edited: m.edited ? { ts: m.edited.ts } : undefined,
    }),
  };
}

const MessageEnvelope = z.object({
  type: z.literal('message'),
  subtype: z.string().nullish(),
  channel: Id,
  channel_type: ChannelTypeSchema,
  ts: Ts.nullish(),
  event_ts: Ts.nullish(),
  deleted_ts: Ts.nullish(),
  message: z.unknown().optional(),
});

const ReactionEvent = z.object({
  type: z.enum(['reaction_added', 'reaction_removed']),
  user: Id,
  reaction: z.string().min(1).max(255),
  item_user: Id.nullish(),
  item: z.object({ type: z.literal('message'), channel: Id, ts: Ts }),
  event_ts: Ts,
});

/** An Events API `event` as a chat event, or null for types the service does not ingest. */
export function fromSlackEvent(event: unknown): ChatEventDraft | null {
  const type = (event as { type?: unknown } | null)?.type;
  if (type === 'reaction_added' || type === 'reaction_removed') return reaction(event);
  if (type !== 'message') return namesFromSlackEvent(event);
  const p = MessageEnvelope.safeParse(event);
  if (!p.success) return null;
  const e = p.data;
  const eventTs = e.event_ts ?? e.ts ?? null;
  if (e.subtype === 'message_changed') {
    const m = SlackMessage.safeParse(e.message);
    if (!m.success || !eventTs) return null;
    // INTERFACE §8.2: the id names the original message's ts.
    return {
      id: `message_changed:${e.channel}:${m.data.ts}:${eventTs}`,
      kind: 'message_changed',
      occurredAt: tsToIso(eventTs),
      payload: present({
        channel_id: e.channel,
        channel_type: e.channel_type,
        ts: m.data.ts,
        event_ts: eventTs,
        text: m.data.text ?? '',
        user: m.data.user,
        files: fileRefs(m.data.files),
        bot_id: m.data.bot_id,
        app_id: m.data.app_id,
      }),
    };
  }
  if (e.subtype === 'message_deleted') {
    if (!e.deleted_ts || !eventTs) return null;
    return {
      id: `message_deleted:${e.channel}:${e.deleted_ts}:${eventTs}`,
      kind: 'message_deleted',
      occurredAt: tsToIso(eventTs),
      payload: { channel_id: e.channel, channel_type: e.channel_type, ts: e.deleted_ts, event_ts: eventTs },
    };
  }
  return messageEvent(e.channel, e.channel_type, event);
}

function reaction(event: unknown): ChatEventDraft | null {
  const p = ReactionEvent.safeParse(event);
  if (!p.success) return null;
  const r = p.data;
  return {
    id: `${r.type}:${r.item.channel}:${r.item.ts}:${r.user}:${r.reaction}:${r.event_ts}`,
    kind: r.type,
    occurredAt: tsToIso(r.event_ts),
    payload: present({
      channel_id: r.item.channel,
      item_ts: r.item.ts,
      user: r.user,
      name: r.reaction,
      event_ts: r.event_ts,
      item_user: r.item_user,
    }),
  };
}
