/**
 * Names of chat users and channels, key `chat-names/{install_id}` (INTERFACE §9.5). The
 * install actor tells it, after an event committed, which user and channel ids the event
 * named; ids whose node has no name yet are queued, and a self-ticking loop looks each up
 * (`users.info`, `conversations.info`) paced per method inside Slack's tiers, publishing
 * the answer as a `user_info` / `channel_info` event on the ingest path. So ingest never
 * waits on Slack, the result lands through the same dedup and projection as everything
 * else, and history (its own walker, its own pacing) stays ordered.
 *
 * The per-install cache is the graph itself: a node that has a name (users: `is_bot`,
 * channels: `is_im`, set by every lookup) is not asked about again, and a `user_change`
 * event updates it directly. The queue lives in memory: a lookup lost to a shard move is
 * asked for again the next time the id is named.
 */
import type pg from 'pg';
import { backoffMs, type BackoffPolicy } from '../../backoff.js';
import { AppError, isRetryable, Unavailable } from '../../errors.js';
import type { BotCredentials } from '../../connectors/chatapp/bot-token.js';
import { LOOKUP_INTERVAL_MS, lookupName, type NameTarget } from '../../connectors/chatapp/name-lookup.js';
import { chatIds } from '../../graph/project-chat.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { ActorAsk, IngestEvent } from '../../runtime/ports.js';
import type { ActorContext, ActorDefinition } from '../../runtime/actor-definition.js';
import { createTicker, type Ticker } from '../../runtime/ticker.js';
import { getInstallById } from '../../store/installs.js';
import { CHAT_NAMES_KIND, type ChatNamesProtocol } from './chat-names-protocol.js';

export interface ChatNamesPorts {
  config: Readonly<Config>;
  pool: pg.Pool;
  log: Logger;
  actors: ActorAsk;
  publish(event: IngestEvent): Promise<unknown>;
  credentials: BotCredentials;
  now?: () => number;
  /** The backoff's draw in [0, 1) (tests fix it). */
  random?: () => number;
}

interface Pending extends NameTarget {
  attempts: number;
}

interface State {
  pending: Map<string, Pending>;
  /** Ids looked up (or found named) lately, with when: spares the graph query. */
  recent: Map<string, number>;
  nextAt: { user: number; channel: number };
  /** Transient lookup failures in a row per method, and failed ticks in a row: for the backoffs. */
  failures: { user: number; channel: number; tick: number };
  ticker: Ticker;
}

/** Bounds: memory of one activation, and how long a looked-up id is trusted before the graph is asked again. */
const MAX_PENDING = 5_000;
const RECENT_MAX = 20_000;
const RECENT_TTL_MS = 60 * 60_000;
const MAX_ATTEMPTS = 5;
/** A method whose lookup failed transiently (Slack 5xx, unreachable) pauses on this backoff (backoff.ts). */
const LOOKUP_RETRY: BackoffPolicy = { firstMs: 30_000, capMs: 2 * 60_000 };
/** A tick that failed on our side (Postgres, NATS) is tried again on this backoff. */
const TICK_RETRY: BackoffPolicy = { firstMs: 30_000, capMs: 2 * 60_000 };
const TICK_TIMEOUT_MS = 30_000;

const keyOf = (t: NameTarget) => `${t.type}:${t.id}`;

export function chatNamesActor(ports: ChatNamesPorts): ActorDefinition<State, ChatNamesProtocol> {
  const now = ports.now ?? Date.now;
  const divisor = Math.max(1, ports.config.chatapp.backfillPacingDivisor);

  const remember = (s: State, k: string) => {
    if (s.recent.size >= RECENT_MAX) s.recent.delete(s.recent.keys().next().value as string);
    s.recent.set(k, now());
  };

  /** Which of these targets already have a named node in the graph. */
  const named = async (tenantId: string, teamId: string, targets: NameTarget[]): Promise<Set<string>> => {
    const ids = chatIds(teamId);
    const users = targets.filter((t) => t.type === 'user').map((t) => ids.user(t.id));
    const channels = targets.filter((t) => t.type === 'channel').map((t) => ids.channel(t.id));
    const { rows } = await ports.pool.query<{ kind: string; external_id: string }>(
      `SELECT kind, external_id FROM graph_nodes
       WHERE tenant_id = $1 AND ((kind = 'chat.user' AND external_id = ANY($2::text[]) AND props ? 'is_bot')
          OR (kind = 'chat.channel' AND external_id = ANY($3::text[]) AND props ? 'is_im'))`,
      [tenantId, users, channels],
    );
    const prefix = `${teamId}:`.length;
    return new Set(rows.map((r) => `${r.kind === 'chat.user' ? 'user' : 'channel'}:${r.external_id.slice(prefix)}`));
  };

  const want = async (
    ctx: ActorContext<State>,
    msg: { users?: unknown; channels?: unknown },
  ): Promise<{ queued: number }> => {
    const s = ctx.state;
    const list = (v: unknown) => (Array.isArray(v) ? v : []).filter((x): x is string => typeof x === 'string');
    const fresh = (k: string) => !s.pending.has(k) && now() - (s.recent.get(k) ?? -Infinity) > RECENT_TTL_MS;
    const targets = [
      ...list(msg.users).map((id) => ({ type: 'user' as const, id })),
      ...list(msg.channels).map((id) => ({ type: 'channel' as const, id })),
    ].filter((t) => t.id.length > 0 && t.id.length <= 255 && fresh(keyOf(t)));
    if (targets.length === 0) return { queued: 0 };
    const install = await getInstallById(ports.pool, ctx.key.id[0]!);
    if (!install || install.connector_id !== 'chatapp' || install.status !== 'active') return { queued: 0 };
    const known = await named(install.tenant_id, install.external_id, targets);
    let queued = 0;
    for (const t of targets) {
      const k = keyOf(t);
      if (known.has(k)) remember(s, k);
      else if (s.pending.size < MAX_PENDING) {
        s.pending.set(k, { ...t, attempts: 0 });
        queued++;
      }
    }
    if (queued > 0 && s.ticker.dueAt === null) s.ticker.arm(0);
    return { queued };
  };

  const tick = async (ctx: ActorContext<State>): Promise<Record<string, unknown>> => {
    const s = ctx.state;
    const first = s.pending.values().next();
    if (first.done) return { idle: true };
    const install = await getInstallById(ports.pool, ctx.key.id[0]!);
    if (!install || install.status !== 'active') {
      s.pending.clear();
      return { stopped: 'install not active' };
    }
    // The next target whose method may be called now; else sleep until the earliest is allowed.
    const due = [...s.pending.values()].find((t) => s.nextAt[t.type] <= now());
    if (!due) {
      s.ticker.arm(Math.min(s.nextAt.user, s.nextAt.channel) - now());
      return { waiting: true };
    }
    const k = keyOf(due);
    s.nextAt[due.type] = now() + LOOKUP_INTERVAL_MS[due.type] / divisor;
    const secret = await ports.credentials.get(install, ctx.signal);
    const out = await lookupName(
      { apiUrl: ports.config.chatapp.apiUrl, log: ctx.log, token: secret.bot_token, signal: ctx.signal },
      due,
    );
    if (out.ok || out.kind === 'refused') s.failures[due.type] = 0;
    if (out.ok) {
      if (out.event) {
        await ports.publish({
          installId: install.install_id,
          tenantId: install.tenant_id,
          connectorId: 'chatapp',
          ...out.event,
        });
      }
      s.pending.delete(k);
      remember(s, k);
    } else if (out.kind === 'rate_limited') {
      s.nextAt[due.type] = now() + out.retryAfterMs;
    } else if (out.kind === 'refused' || ++due.attempts >= MAX_ATTEMPTS) {
      s.pending.delete(k);
      remember(s, k);
      ctx.log.info({ target: k, error: out.error }, 'chat name lookup gave up; the node keeps its id only');
    } else {
      // Transient: to the back of the queue, with a pause for this method (never shorter than its pacing).
      s.pending.delete(k);
      s.pending.set(k, due);
      const pause = backoffMs(LOOKUP_RETRY, ++s.failures[due.type], ports.random);
      s.nextAt[due.type] = Math.max(s.nextAt[due.type], now() + pause);
    }
    if (s.pending.size > 0) {
      const next = Math.min(...[...new Set([...s.pending.values()].map((t) => s.nextAt[t.type]))]);
      s.ticker.arm(next - now());
    }
    return { looked_up: k, ok: out.ok };
  };

  return {
    kind: CHAT_NAMES_KIND,
    idleMs: 15 * 60_000,
    async hydrate(key) {
      const log = ports.log.child({ actor: `${CHAT_NAMES_KIND}/${key.id[0]}` });
      const ticker = createTicker({
        fire: () => ports.actors.ask(key, { type: 'tick' }, { timeoutMs: TICK_TIMEOUT_MS }),
        onError: (err) => log.warn({ err }, 'chat name lookup tick failed; the next mention queues it again'),
      });
      const failures = { user: 0, channel: 0, tick: 0 };
      return { pending: new Map(), recent: new Map(), nextAt: { user: 0, channel: 0 }, failures, ticker };
    },
    handlers: {
      want,
      async tick(ctx) {
        const s = ctx.state;
        try {
          const done = await tick(ctx);
          s.failures.tick = 0;
          return done;
        } catch (err) {
          // One that trying again cannot fix is not retried: a `want` that queues a new id ticks again.
          if (!ctx.signal.aborted && s.pending.size > 0 && isRetryable(err))
            s.ticker.arm(backoffMs(TICK_RETRY, ++s.failures.tick, ports.random));
          // A throw nobody classified (Postgres, NATS) is coded here, as the retryable kind it is: the
          // kernel reads an uncoded throw as a crash and drops the activation, queue and count with it.
          throw err instanceof AppError ? err : new Unavailable('chat name lookup tick failed', { cause: err });
        }
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
    },
  };
}
