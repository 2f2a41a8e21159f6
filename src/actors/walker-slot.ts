/**
 * What every backfill walker activation holds and how it keeps it (chat-backfill.ts,
 * codehost-backfill.ts): its cursor, committed to the KV cursors bucket by revision
 * compare-and-set so a stale activation elsewhere (a lease overlap) cannot overwrite a
 * newer step, and a ticker that sends the walker its next step through the router.
 */
import type { ActorAsk, KvPort } from '../runtime/ports.js';
import type { Logger } from '../log.js';
import type { ActorContext } from '../runtime/actor-definition.js';
import type { ActorKey } from '../runtime/names.js';
import { createTicker, type Ticker } from '../runtime/ticker.js';

export interface WalkerSlot<C> {
  cursor: C | null;
  revision: number | null;
  ticker: Ticker;
}

/** A step is one upstream call plus at most one page of publishes and a few writes. */
const TICK_TIMEOUT_MS = 60_000;

export function walkerCursors<C>(o: {
  cursors: KvPort;
  key: (installId: string) => string;
  encode: (c: C) => Uint8Array;
  /** Null (or a throw caught by the caller's step) for a cursor another version wrote. */
  decode: (bytes: Uint8Array) => C | null;
}) {
  return {
    /** Activation: the committed cursor (if any) and a ticker that asks `key` for its next `tick`. */
    async load(key: ActorKey, deps: { actors: ActorAsk; log: Logger }): Promise<WalkerSlot<C>> {
      const log = deps.log.child({ actor: `${key.kind}/${key.id[0]}` });
      const ticker = createTicker({
        fire: () => deps.actors.ask(key, { type: 'tick' }, { timeoutMs: TICK_TIMEOUT_MS }),
        onError: (err) => log.warn({ err }, 'backfill tick failed; the next tick or a shard resume picks the walk up'),
      });
      const stored = await o.cursors.get(o.key(key.id[0]!));
      // An unreadable cursor restarts the walk; its revision is kept so the first save
      // replaces it instead of failing to create it. Event ids make the restart harmless.
      return { cursor: stored ? o.decode(stored.value) : null, revision: stored?.revision ?? null, ticker };
    },

    /** Commit `cursor`; false when another activation wrote first (the slot then holds theirs). */
    async save(slot: WalkerSlot<C>, installId: string, cursor: C): Promise<boolean> {
      const key = o.key(installId);
      const bytes = o.encode(cursor);
      const rev =
        slot.revision === null ? await o.cursors.create(key, bytes) : await o.cursors.update(key, bytes, slot.revision);
      if (rev === null) {
        const stored = await o.cursors.get(key);
        slot.cursor = stored ? o.decode(stored.value) : null;
        slot.revision = stored?.revision ?? null;
        return false;
      }
      slot.cursor = cursor;
      slot.revision = rev;
      return true;
    },
  };
}

/** `resume` (after install, on shard acquisition): a tick unless one is pending. */
export async function resumeWalk(ctx: ActorContext<WalkerSlot<unknown>>): Promise<{ ok: true }> {
  if (ctx.state.ticker.dueAt === null) ctx.state.ticker.arm(0);
  return { ok: true };
}
