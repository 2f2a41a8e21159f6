/**
 * The chat channel bucket actor, key `chat-bucket/{team_id}/{channel_id}` (ARCHITECTURE
 * "Actors"; spec §8, INTERFACE §8.4, §8.5, §8.26): one write per second per channel.
 * `take` answers a permit, or a refusal with the time to wait:
 * - a channel held by Slack's own 429 refuses until its Retry-After passed;
 * - a throttled channel refuses at once and charges no workspace token (spec §8);
 * - otherwise the workspace bucket is asked for a token (waiting up to 10 s is allowed),
 *   and only when it grants one is the channel's token taken, at the moment the write
 *   will go out.
 * One activation per key in the cluster makes the limit hold across nodes; state is
 * written through to KV so a shard move keeps holds and the last write time.
 */
import type { ActorAsk, KvPort } from '../../runtime/ports.js';
import type { Permit } from '../../connectors/chatapp/emit.js';
import { CHANNEL_BUCKET, reserve, WORKSPACE_MAX_WAIT_MS } from '../../connectors/chatapp/rate-buckets.js';
import type { ActorDefinition } from '../../runtime/actor-definition.js';
import { kvKey } from '../../runtime/kv-port.js';
import type { ActorKey } from '../../runtime/names.js';
import { readJson, writeJson } from './chat-bucket-store.js';
import { chatWorkspaceKey } from './chat-workspace-bucket-protocol.js';
import { CHAT_BUCKET_KIND, type ChatBucketProtocol } from './chat-bucket-protocol.js';

interface State {
  tat: number;
  holdUntil: number;
  /**
   * The last takes by id, with the permit answered and the `tat` before it: a take resent
   * after its node died (the router resends idempotent asks) answers the same permit
   * instead of charging the channel twice, and a refund can undo a take whose write never
   * went out, so a throttle always means a write really went out within the second.
   */
  takes: Array<{ id: string; permit: Permit; prevTat: number; tat: number }>;
}

const TAKES_KEPT = 16;

/** The workspace ask must leave the emit time to wait and post within its own deadline. */
const WORKSPACE_ASK_TIMEOUT_MS = 5_000;

export function chatBucketActor(ports: {
  actors: ActorAsk;
  kv: KvPort;
  now?: () => number;
}): ActorDefinition<State, ChatBucketProtocol> {
  const now = ports.now ?? Date.now;
  const storeKey = (key: ActorKey) => kvKey([CHAT_BUCKET_KIND, ...key.id]);
  return {
    kind: CHAT_BUCKET_KIND,
    idleMs: 2 * 60_000,
    async hydrate(key) {
      const saved = await readJson<State>(ports.kv, storeKey(key));
      return {
        tat: typeof saved?.tat === 'number' ? saved.tat : 0,
        holdUntil: typeof saved?.holdUntil === 'number' ? saved.holdUntil : 0,
        takes: Array.isArray(saved?.takes) ? saved.takes.slice(-TAKES_KEPT) : [],
      };
    },
    handlers: {
      async take(ctx, msg): Promise<Permit> {
        const [teamId] = ctx.key.id;
        const takeId = typeof msg.takeId === 'string' ? msg.takeId.slice(0, 100) : null;
        const seen = takeId === null ? undefined : ctx.state.takes.find((x) => x.id === takeId);
        if (seen) return seen.permit;
        const t = now();
        if (ctx.state.holdUntil > t) return { ok: false, retryAfterMs: ctx.state.holdUntil - t, reason: 'held' };
        const channel = reserve(ctx.state.tat, t, CHANNEL_BUCKET);
        if (!channel.ok) return { ok: false, retryAfterMs: channel.retryAfterMs, reason: 'channel' };
        const ws = await ports.actors.ask(
          chatWorkspaceKey(teamId!),
          {
            type: 'reserve',
            maxWaitMs: Math.min(WORKSPACE_MAX_WAIT_MS, msg.maxWaitMs ?? WORKSPACE_MAX_WAIT_MS),
            ...(takeId === null ? {} : { reserveId: takeId }),
          },
          // With an id a resent reservation is answered, not charged, again (INTERFACE §8.24).
          { timeoutMs: WORKSPACE_ASK_TIMEOUT_MS, idempotent: takeId !== null },
        );
        if (!ws.ok) return { ok: false, retryAfterMs: ws.retryAfterMs, reason: 'workspace' };
        // The channel's token is spent when the write actually goes out, after the wait.
        const prevTat = ctx.state.tat;
        const spent = reserve(ctx.state.tat, t + ws.waitMs, CHANNEL_BUCKET);
        if (spent.ok) ctx.state.tat = spent.tat;
        const permit: Permit = { ok: true, waitMs: ws.waitMs };
        if (takeId !== null) {
          ctx.state.takes = [...ctx.state.takes, { id: takeId, permit, prevTat, tat: ctx.state.tat }].slice(
            -TAKES_KEPT,
          );
        }
        await writeJson(ports.kv, storeKey(ctx.key), ctx.state, ctx.log);
        return permit;
      },

      /**
       * The write of take `takeId` never went out (its emit failed before or without
       * reaching Slack): give the channel its token back if nothing was taken since.
       */
      async refund(ctx, msg: { takeId?: string }) {
        const i = ctx.state.takes.findIndex((x) => x.id === msg.takeId);
        const taken = ctx.state.takes[i];
        if (!taken || taken.tat !== ctx.state.tat) return { refunded: false };
        ctx.state.tat = taken.prevTat;
        ctx.state.takes = ctx.state.takes.filter((_, j) => j !== i);
        await writeJson(ports.kv, storeKey(ctx.key), ctx.state, ctx.log);
        return { refunded: true };
      },

      /** INTERFACE §8.4/§8.26: Slack's 429 on this channel holds it, and only it, for Retry-After. */
      async hold(ctx, msg) {
        const until = now() + Math.max(0, Number(msg.retryAfterMs) || 0);
        if (until > ctx.state.holdUntil) {
          ctx.state.holdUntil = until;
          await writeJson(ports.kv, storeKey(ctx.key), ctx.state, ctx.log);
        }
        return { ok: true };
      },
    },
  };
}
