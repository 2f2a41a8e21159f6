/**
 * The chat workspace bucket actor, key `chat-workspace/{team_id}` (spec §8, INTERFACE
 * §8.5): the workspace-wide write budget, 100 per minute with a burst of 100. It is only
 * ever charged by a channel bucket that already allowed the write, so a throttled
 * channel consumes no workspace token. A reservation may come with a wait of up to
 * `maxWaitMs` (INTERFACE §3: 10 s); the waiting happens at the caller, so this mailbox
 * never blocks. One activation per key in the cluster makes the budget hold across nodes;
 * its state is written through to KV so a shard move keeps it.
 */
import type { KeyOf, KvPort } from '../../runtime/ports.js';
import { reserve, WORKSPACE_BUCKET, WORKSPACE_MAX_WAIT_MS } from '../../connectors/chatapp/rate-buckets.js';
import type { ActorDefinition } from '../../runtime/kernel.js';
import { kvKey } from '../../runtime/kv-port.js';
import type { ActorKey } from '../../runtime/names.js';
import { readJson, writeJson } from './chat-bucket-store.js';

export const CHAT_WORKSPACE_KIND = 'chat-workspace';

export type WorkspaceReservation = { ok: true; waitMs: number } | { ok: false; retryAfterMs: number };

/** The workspace bucket's one message (spec §8: charged only after the channel bucket allowed). */
export type ChatWorkspaceProtocol = {
  reserve: { msg: { maxWaitMs?: number }; answer: WorkspaceReservation };
};

export function chatWorkspaceKey(teamId: string): KeyOf<ChatWorkspaceProtocol> {
  return { kind: CHAT_WORKSPACE_KIND, id: [teamId] };
}

interface State {
  tat: number;
}

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
      return { tat: typeof saved?.tat === 'number' ? saved.tat : 0 };
    },
    handlers: {
      async reserve(ctx, msg) {
        const maxWait = Math.min(WORKSPACE_MAX_WAIT_MS, Math.max(0, Number(msg.maxWaitMs ?? WORKSPACE_MAX_WAIT_MS)));
        const r = reserve(ctx.state.tat, now(), WORKSPACE_BUCKET, maxWait);
        if (!r.ok) return r;
        ctx.state.tat = r.tat;
        await writeJson(ports.kv, storeKey(ctx.key), ctx.state, ctx.log);
        return { ok: true, waitMs: r.waitMs };
      },
    },
  };
}
