/**
 * The chat workspace bucket actor, key `chat-workspace/{team_id}` (spec §8, INTERFACE
 * §8.5): the workspace-wide write budget, 100 per minute with a burst of 100. It is only
 * ever charged by a channel bucket that already allowed the write, so a throttled
 * channel consumes no workspace token. A reservation may come with a wait of up to
 * `maxWaitMs` (INTERFACE §3: 10 s); the waiting happens at the caller, so this mailbox
 * never blocks. One activation per key in the cluster makes the budget hold across nodes;
 * its state is written through to KV so a shard move keeps it.
 */
import type { KvPort } from '../../runtime/ports.js';
import { reserve, WORKSPACE_BUCKET, WORKSPACE_MAX_WAIT_MS } from '../../connectors/chatapp/rate-buckets.js';
import type { ActorDefinition } from '../../runtime/actor-definition.js';
import { kvKey } from '../../runtime/kv-port.js';
import type { ActorKey } from '../../runtime/names.js';
import { readJson, writeJson } from './chat-bucket-store.js';
import {
  CHAT_WORKSPACE_KIND,
  type WorkspaceReservation,
  type ChatWorkspaceProtocol,
} from './chat-workspace-bucket-protocol.js';

interface State {
  tat: number;
  /** Recent reservations by id: a resent reservation is answered again, not charged twice. */
  recent: Array<{ id: string; r: WorkspaceReservation }>;
}

const RECENT_KEPT = 64;

export function chatWorkspaceBucketActor(ports: {
  kv: KvPort;
  now?: () => number;
}): ActorDefinition<State, ChatWorkspaceProtocol> {
  const now = ports.now ?? Date.now;
  const storeKey = (key: ActorKey) => kvKey([CHAT_WORKSPACE_KIND, ...key.id]);
  return {
    kind: CHAT_WORKSPACE_KIND,
    idleMs: 2 * 60_000,
    async hydrate(key) {
      const saved = await readJson<State>(ports.kv, storeKey(key));
      return {
        tat: typeof saved?.tat === 'number' ? saved.tat : 0,
        recent: Array.isArray(saved?.recent) ? saved.recent.slice(-RECENT_KEPT) : [],
      };
    },
    handlers: {
      async reserve(ctx, msg): Promise<WorkspaceReservation> {
        const id = typeof msg.reserveId === 'string' ? msg.reserveId.slice(0, 100) : null;
        const seen = id === null ? undefined : ctx.state.recent.find((x) => x.id === id);
        if (seen) return seen.r;
        const maxWait = Math.min(WORKSPACE_MAX_WAIT_MS, Math.max(0, Number(msg.maxWaitMs ?? WORKSPACE_MAX_WAIT_MS)));
        const r = reserve(ctx.state.tat, now(), WORKSPACE_BUCKET, maxWait);
        if (!r.ok) return r;
        ctx.state.tat = r.tat;
        const answer: WorkspaceReservation = { ok: true, waitMs: r.waitMs };
        if (id !== null) ctx.state.recent = [...ctx.state.recent, { id, r: answer }].slice(-RECENT_KEPT);
        await writeJson(ports.kv, storeKey(ctx.key), ctx.state, ctx.log);
        return answer;
      },
    },
  };
}
