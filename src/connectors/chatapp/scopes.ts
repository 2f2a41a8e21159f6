/**
 * Which conversations a bot may walk, from the scopes it was granted. A type is listed
 * only with both its `:read` scope (conversations.list) and its `:history` scope
 * (conversations.history / .replies). spec §6.1 rule 2: without `mpim:history` group
 * DMs drop out of backfill, and the install logs it.
 */
import type { ChannelType } from './chat-event.js';

const TYPES: Array<{ type: ChannelType; listType: string; read: string; history: string }> = [
  { type: 'channel', listType: 'public_channel', read: 'channels:read', history: 'channels:history' },
  { type: 'group', listType: 'private_channel', read: 'groups:read', history: 'groups:history' },
  { type: 'im', listType: 'im', read: 'im:read', history: 'im:history' },
  { type: 'mpim', listType: 'mpim', read: 'mpim:read', history: 'mpim:history' },
];

/** The `types` argument of conversations.list for these scopes ('' when none can be walked). */
export function walkableTypes(scopes: readonly string[]): string {
  const granted = new Set(scopes);
  return TYPES.filter((t) => granted.has(t.read) && granted.has(t.history))
    .map((t) => t.listType)
    .join(',');
}

export function missingGroupDmHistory(scopes: readonly string[]): boolean {
  return !scopes.includes('mpim:history');
}

/** Slack's `scope` answer ("a,b,c") as a list. */
export function parseScopes(scope: unknown): string[] {
  return typeof scope === 'string'
    ? scope
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
    : [];
}

/** A conversations.list entry's type (INTERFACE §4 `channel_type`). */
export function channelTypeOf(c: {
  is_im?: boolean;
  is_mpim?: boolean;
  is_private?: boolean;
  is_group?: boolean;
}): ChannelType {
  if (c.is_im) return 'im';
  if (c.is_mpim) return 'mpim';
  if (c.is_private || c.is_group) return 'group';
  return 'channel';
}
