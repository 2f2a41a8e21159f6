/**
 * Names of channels and users as chat events (INTERFACE §9.5): `channel_info` from
 * `conversations.list` / `conversations.info` and the live channel events (rename,
 * archive, unarchive, created), `user_info` from `users.info` and the live `user_change` /
 * `team_join`. Ids are content-addressed (`{kind}:{id}:{digest}`), so the same facts read
 * twice are one event and changed facts a new one; `as_of` is when they became true
 * upstream (the projection's version), absent when the platform does not say. Pure.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ChatEventDraft } from './chat-event.js';

const Id = z.string().min(1).max(255);
const Ts = z.string().regex(/^\d{1,12}\.\d{1,9}$/);

/** A conversation object of conversations.list / .info / channel events. */
const SlackChannel = z.object({
  id: Id,
  name: z.string().max(255).nullish(),
  is_private: z.boolean().nullish(),
  is_im: z.boolean().nullish(),
  is_mpim: z.boolean().nullish(),
  is_archived: z.boolean().nullish(),
  created: z.number().nullish(),
  /** Epoch milliseconds of the last change (conversations.list / .info). */
  updated: z.number().nullish(),
});

const SlackUser = z.object({
  id: Id,
  name: z.string().max(255).nullish(),
  real_name: z.string().max(255).nullish(),
  is_bot: z.boolean().nullish(),
  deleted: z.boolean().nullish(),
  /** Epoch seconds of the last profile change. */
  updated: z.number().nullish(),
  profile: z
    .object({ real_name: z.string().max(255).nullish() })
    .passthrough()
    .nullish(),
});

const iso = (ms: number | null | undefined): string | undefined =>
  typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString() : undefined;

const tsIso = (ts: string): string => {
  const [s, frac = ''] = ts.split('.');
  return new Date(Number(s) * 1000 + Number(`${frac}000`.slice(0, 3))).toISOString();
};

function draft(kind: 'channel_info' | 'user_info', id: string, payload: Record<string, unknown>): ChatEventDraft {
  const clean = Object.fromEntries(Object.entries(payload).filter(([, v]) => v !== undefined && v !== null));
  const digest = createHash('sha256').update(JSON.stringify(clean)).digest('base64url').slice(0, 16);
  return { id: `${kind}:${id}:${digest}`, kind, occurredAt: (clean.as_of as string) ?? null, payload: clean };
}

/** A conversation object → `channel_info`; `asOf` overrides its own `updated` (a live event's time). */
export function channelInfoEvent(raw: unknown, asOf?: string): ChatEventDraft | null {
  const p = SlackChannel.safeParse(raw);
  if (!p.success) return null;
  const c = p.data;
  return draft('channel_info', c.id, {
    channel_id: c.id,
    name: c.is_im ? undefined : (c.name ?? undefined),
    is_private: c.is_private ?? undefined,
    is_im: c.is_im ?? undefined,
    is_mpim: c.is_mpim ?? undefined,
    is_archived: c.is_archived ?? undefined,
    as_of: asOf ?? iso(c.updated) ?? iso(typeof c.created === 'number' ? c.created * 1000 : null),
  });
}

/** A user object → `user_info`. */
export function userInfoEvent(raw: unknown): ChatEventDraft | null {
  const p = SlackUser.safeParse(raw);
  if (!p.success) return null;
  const u = p.data;
  return draft('user_info', u.id, {
    user_id: u.id,
    name: u.name ?? undefined,
    real_name: u.real_name ?? u.profile?.real_name ?? undefined,
    is_bot: u.is_bot ?? false,
    deleted: u.deleted ?? undefined,
    as_of: iso(typeof u.updated === 'number' ? u.updated * 1000 : null),
  });
}

const ChannelEvent = z.object({
  type: z.string(),
  channel: z.union([Id, z.object({ id: Id }).passthrough()]),
  event_ts: Ts.nullish(),
});

/** The live events that name channels or users; null for any other type. */
export function namesFromSlackEvent(event: unknown): ChatEventDraft | null {
  const type = (event as { type?: unknown } | null)?.type;
  if (type === 'user_change' || type === 'team_join') return userInfoEvent((event as { user?: unknown }).user);
  if (typeof type !== 'string' || !CHANNEL_EVENTS.has(type)) return null;
  const p = ChannelEvent.safeParse(event);
  if (!p.success) return null;
  const e = p.data;
  const asOf = e.event_ts ? tsIso(e.event_ts) : undefined;
  const base = typeof e.channel === 'string' ? { id: e.channel } : e.channel;
  const facts: Record<string, unknown> = { ...base };
  if (type.startsWith('group_')) facts.is_private = true;
  if (type.endsWith('_archive')) facts.is_archived = true;
  if (type.endsWith('_unarchive')) facts.is_archived = false;
  return channelInfoEvent(facts, asOf);
}

const CHANNEL_EVENTS = new Set([
  'channel_rename',
  'channel_created',
  'channel_archive',
  'channel_unarchive',
  'group_rename',
  'group_archive',
  'group_unarchive',
]);
