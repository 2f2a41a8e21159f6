/** The user and channel ids a chat event names (INTERFACE §4 payloads), for name lookups (INTERFACE §9.5). Pure. */

export interface NamedIds {
  users: string[];
  channels: string[];
}

const NAMING_KINDS = new Set(['message', 'message_changed', 'reaction_added', 'reaction_removed']);

export function namedIds(kind: string, payload: unknown): NamedIds {
  const users = new Set<string>();
  const channels = new Set<string>();
  if (NAMING_KINDS.has(kind) && typeof payload === 'object' && payload !== null) {
    const p = payload as Record<string, unknown>;
    const add = (set: Set<string>, v: unknown) => {
      if (typeof v === 'string' && v.length > 0 && v.length <= 255) set.add(v);
    };
    add(channels, p.channel_id);
    add(users, p.user);
    add(users, p.item_user);
    if (Array.isArray(p.reactions)) {
      for (const r of p.reactions) {
        const list = (r as { users?: unknown } | null)?.users;
        if (Array.isArray(list)) for (const u of list) add(users, u);
      }
    }
  }
  return { users: [...users], channels: [...channels] };
}
