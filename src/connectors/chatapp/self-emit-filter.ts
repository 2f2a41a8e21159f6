/**
 * The chat self-emit filter, two tiers (spec §6.3, INTERFACE §8.20, §8.23), run by the
 * driver inside the ingest transaction so a drop is atomic with it. Tier 1 (in memory):
 * anything our bot authored: `bot_id` or `app_id` equal to the install's, or `user` equal
 * to its `bot_user_id`. Tier 2 (one indexed lookup): a message whose ts this install
 * posted (a mirror or re-attribution that lost the author fields).
 */
import type { Queryable } from '../../store/db.js';
import { emittedMessageKey, emittedMessagesAmong, type BotIdentity } from '../../store/chat-claims.js';

export type Verdict = 'keep' | 'own_author' | 'own_post';

type Payload = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** Tier 1. Reactions carry only `user`; messages and edits carry the three author fields. */
export function authoredByBot(
  kind: string,
  payload: Payload,
  bot: Pick<BotIdentity, 'bot_user_id' | 'bot_id' | 'app_id'>,
): boolean {
  if (kind === 'message_deleted') return false;
  const user = str(payload.user);
  if (user !== null && user === bot.bot_user_id) return true;
  if (kind === 'reaction_added' || kind === 'reaction_removed') return false;
  const botId = str(payload.bot_id);
  const appId = str(payload.app_id);
  return (botId !== null && botId === bot.bot_id) || (appId !== null && appId === bot.app_id);
}

const MESSAGE_KINDS = new Set(['message', 'message_changed', 'message_deleted']);

/** An event to judge, with the install it came to and that install's bot. */
export interface Judged {
  installId: string;
  bot: BotIdentity;
  kind: string;
  payload: Payload;
}

/**
 * Both tiers, for a batch of events of one or more installs (group commit: Tier 2 is one
 * lookup for all of them). Tier 2 applies to messages, edits and deletes (all name the
 * posted ts); never to reactions, whose provider id a user's identical reaction would share.
 */
export async function selfEmitVerdicts(tx: Queryable, events: readonly Judged[]): Promise<Verdict[]> {
  const posted = (e: Judged) => {
    const channelId = str(e.payload.channel_id);
    const ts = str(e.payload.ts);
    return MESSAGE_KINDS.has(e.kind) && channelId !== null && ts !== null
      ? { installId: e.installId, channelId, ts }
      : null;
  };
  const own = events.map((e) => authoredByBot(e.kind, e.payload, e.bot));
  const probes = events.map((e, i) => (own[i] ? null : posted(e)));
  const found = await emittedMessagesAmong(
    tx,
    probes.filter((p) => p !== null),
  );
  return events.map((_, i): Verdict => {
    if (own[i]) return 'own_author';
    const p = probes[i];
    return p && found.has(emittedMessageKey(p.installId, p.channelId, p.ts)) ? 'own_post' : 'keep';
  });
}
