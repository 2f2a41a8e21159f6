/**
 * The chat backfill walker actor, key `chat-backfill/{install_id}` (spec §1, ARCHITECTURE
 * "Actors"). Each tick makes exactly one upstream call (backfill-walk.ts names it),
 * publishes what it found into the ingest stream with the same ids as live events, then
 * saves the cursor (KV, revision-checked) and the install's backfill progress. A crash
 * between publish and save repeats the call; the ids absorb the repeat. Pacing is per
 * Web API method and lives in the cursor, so it survives restarts (INTERFACE §8.22).
 *
 * The walker ticks itself through the router (runtime/ticker.ts), runs only while the
 * install is active, and is resumed by `resume` after the OAuth callback and on every
 * shard acquisition for unfinished walks.
 */
import type pg from 'pg';
import { backoffMs, type BackoffPolicy } from '../../backoff.js';
import type { Config } from '../../config.js';
import type { ActorAsk, IngestEvent, KvPort } from '../../runtime/ports.js';
import { AppError, Internal } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { BotCredentials } from '../../connectors/chatapp/bot-token.js';
import { callWalkMethod } from '../../connectors/chatapp/backfill-call.js';
import { resumeWalk, walkerCursors, type WalkerSlot } from '../walker-slot.js';
import {
  decodeCursor,
  encodeCursor,
  initialCursor,
  phaseOf,
  type BackfillCursor,
} from '../../connectors/chatapp/backfill-cursor.js';
import { beginCatchUp, endCatchUpWalk, missingOf, saveCatchUpProgress } from './chat-catch-up.js';
import { applyOutcome, nextCall, pacingFor, type Ending } from '../../connectors/chatapp/backfill-walk.js';
import { missingGroupDmHistory, walkableTypes } from '../../connectors/chatapp/scopes.js';
import type { ActorContext, ActorDefinition } from '../../runtime/actor-definition.js';
import { kvKey } from '../../runtime/kv-port.js';
import { getBotIdentity } from '../../store/chat-claims.js';
import { getInstallById, setBackfill, type Install } from '../../store/installs.js';
import { CHAT_BACKFILL_KIND, type ChatBackfillProtocol } from './chat-backfill-protocol.js';

export interface ChatBackfillPorts {
  config: Readonly<Config>;
  pool: pg.Pool;
  log: Logger;
  actors: ActorAsk;
  cursors: KvPort;
  publish(event: IngestEvent): Promise<unknown>;
  credentials: BotCredentials;
  now?: () => number;
  /** Counts messages a catch-up found missing and ingested (a metric). */
  onRecovered?: (n: number) => void;
  /** The backoff's draw in [0, 1) (tests fix it). */
  random?: () => number;
}

interface State extends WalkerSlot<BackfillCursor> {
  /** Steps failed in a row, for the backoff. */
  failures: number;
}
type Walk = { mode: 'backfill' | 'catch_up' } | { waitMs: number } | null;

/**
 * After a failure of our own side (NATS, Postgres), the step is tried again on this
 * backoff (upstream failures are paced in the cursor, backfill-walk.ts). Every failure
 * is retried, whatever `isRetryable` says of it: a cursor another activation wrote
 * (`Internal`, reloaded) continues from theirs, an install whose credentials went with an
 * uninstall is stopped by the next step, and a walk left unticked would be resumed by the
 * resume sweep within a minute anyway.
 */
const STEP_RETRY: BackoffPolicy = { firstMs: 5_000, capMs: 60_000 };
/** The `last_error` of a walk its install's uninstall ended. */
const UNINSTALLED = 'install uninstalled';

export function chatBackfillActor(ports: ChatBackfillPorts): ActorDefinition<State, ChatBackfillProtocol> {
  const now = ports.now ?? Date.now;
  const pacing = pacingFor(ports.config.chatapp.appTier, ports.config.chatapp.backfillPacingDivisor);
  const storeKey = (installId: string) => kvKey([CHAT_BACKFILL_KIND, installId]);

  const walker = walkerCursors({ cursors: ports.cursors, key: storeKey, encode: encodeCursor, decode: decodeCursor });
  const save = async (ctx: ActorContext<State>, cursor: BackfillCursor): Promise<void> => {
    // Someone else wrote the cursor (a stale activation elsewhere): continue from theirs.
    if (!(await walker.save(ctx.state, ctx.key.id[0]!, cursor)))
      throw new Internal('backfill cursor changed under this walker; reloaded');
  };

  const end = async (
    ctx: ActorContext<State>,
    install: Install,
    ending: Exclude<Ending, null>,
    cursor: BackfillCursor,
    walk: { mode: 'backfill' | 'catch_up' },
  ) => {
    const reason = ending.state === 'failed' ? ending.reason : undefined;
    if (walk.mode === 'catch_up') await endCatchUpWalk(ports.pool, install.install_id, cursor, ending);
    else await setBackfill(ports.pool, install.install_id, ending.state, progressOf(cursor, reason ?? null));
    await forget(install.install_id, ctx);
    // The next tick looks for a gap recorded meanwhile (a catch-up after the backfill, or the next one).
    ctx.state.ticker.arm(0);
    const what = walk.mode === 'catch_up' ? 'chat catch-up' : 'chat backfill';
    ctx.log[ending.state === 'complete' ? 'info' : 'warn'](
      { installId: install.install_id, ...cursor.progress, reason },
      `${what} ${ending.state}`,
    );
  };

  /**
   * An uninstall is final (a reinstall is a new install, and shard resumes skip inactive
   * installs), so an unfinished walk would otherwise show `running` for ever: it ends
   * `failed` with the reason, its last progress kept. The state goes first, as in `end`.
   */
  const markAbandoned = async (ctx: ActorContext<State>, install: Install) => {
    if (install.backfill.state !== 'pending' && install.backfill.state !== 'running') return;
    const { state: _state, updated_at: _at, ...recorded } = install.backfill;
    const progress = ctx.state.cursor
      ? progressOf(ctx.state.cursor, UNINSTALLED)
      : { ...recorded, last_error: UNINSTALLED };
    await setBackfill(ports.pool, install.install_id, 'failed', progress);
    ctx.log.info({ installId: install.install_id }, 'chat backfill stopped: the install was uninstalled');
  };

  /** The walk this step continues: the backfill while it runs, then any catch-up (never both). */
  const walkOf = async (ctx: ActorContext<State>, install: Install): Promise<Walk> => {
    const installId = install.install_id;
    if (install.backfill.state === 'pending' || install.backfill.state === 'running') {
      if (!ctx.state.cursor || ctx.state.cursor.window) {
        const scopes = (await getBotIdentity(ports.pool, installId))?.scopes ?? [];
        ctx.state.cursor = initialCursor(walkableTypes(scopes), missingGroupDmHistory(scopes));
      }
      return { mode: 'backfill' };
    }
    const begun = await beginCatchUp(ports.pool, installId, ctx.state.cursor, now(), pacing);
    if (begun === null || 'waitMs' in begun) {
      // A cursor left by an ended walk (its delete failed) is dropped, not continued.
      if (ctx.state.cursor) await forget(installId, ctx);
      return begun === null ? null : begun;
    }
    ctx.state.cursor = begun.cursor;
    return { mode: 'catch_up' };
  };

  const forget = async (installId: string, ctx: ActorContext<State>) => {
    await ports.cursors.delete(storeKey(installId));
    ctx.state.cursor = null;
    ctx.state.revision = null;
  };

  const step = async (ctx: ActorContext<State>): Promise<Record<string, unknown>> => {
    const installId = ctx.key.id[0]!;
    const install = await getInstallById(ports.pool, installId);
    if (!install || install.connector_id !== 'chatapp' || install.status !== 'active') {
      // spec §3.1: the walker works only while the install is active.
      ctx.state.ticker.cancel();
      if (install?.connector_id === 'chatapp') await markAbandoned(ctx, install);
      if (ctx.state.revision !== null) await ports.cursors.delete(storeKey(installId));
      ctx.state.cursor = null;
      ctx.state.revision = null;
      return { stopped: 'install not active' };
    }
    const walk = await walkOf(ctx, install);
    if (walk === null) return { stopped: install.backfill.state };
    if ('waitMs' in walk) {
      ctx.state.ticker.arm(walk.waitMs);
      return { waitingMs: walk.waitMs, for: 'catch-up' };
    }
    const catchUp = walk.mode === 'catch_up';
    const cursor = structuredClone(ctx.state.cursor!);
    const call = nextCall(cursor, pacing);
    if (!call) {
      await end(ctx, install, { state: 'complete' }, cursor, walk);
      return { done: 'complete', mode: walk.mode };
    }
    const wait = cursor.nextAt[call.method] - now();
    if (wait > 0) {
      if (install.backfill.state === 'pending' && !catchUp)
        await setBackfill(ports.pool, installId, 'running', progressOf(cursor, null));
      ctx.state.ticker.arm(wait);
      return { waitingMs: wait, method: call.method };
    }

    const secret = await ports.credentials.get(install, ctx.signal);
    const outcome = await callWalkMethod(
      { apiUrl: ports.config.chatapp.apiUrl, log: ctx.log, token: secret.bot_token, signal: ctx.signal },
      call,
    );
    const { events: read, ending } = applyOutcome(cursor, call, outcome, now(), pacing);
    // The call is spent whatever happens next: its pacing must hold even if the page is not
    // stored (INTERFACE §8.22), so the unchanged walk with the new next-allowed time is kept.
    const paced = structuredClone(ctx.state.cursor!);
    paced.nextAt[call.method] = cursor.nextAt[call.method];
    ctx.state.cursor = paced;
    try {
      // INTERFACE §10.6: a catch-up publishes only what the events lack, and counts it.
      const events = catchUp ? await missingOf(ports.pool, installId, read) : read;
      for (const ev of events) {
        const ack = await ports.publish({
          installId,
          tenantId: install.tenant_id,
          connectorId: 'chatapp',
          id: ev.id,
          kind: ev.kind,
          occurredAt: ev.occurredAt,
          payload: ev.payload,
        });
        if (catchUp && ev.kind === 'message' && !(ack as { duplicate?: boolean } | null)?.duplicate) {
          cursor.progress.recovered = (cursor.progress.recovered ?? 0) + 1;
          ports.onRecovered?.(1);
        }
      }
    } catch (err) {
      await save(ctx, paced).catch((e: unknown) => ctx.log.warn({ err: e }, 'pacing not saved'));
      throw err;
    }
    if (ending) {
      await end(ctx, install, ending, cursor, walk);
      return { done: ending.state, mode: walk.mode };
    }
    await save(ctx, cursor);
    if (catchUp) await saveCatchUpProgress(ports.pool, installId, cursor);
    else await setBackfill(ports.pool, installId, 'running', progressOf(cursor, null));
    const next = nextCall(cursor, pacing);
    ctx.state.ticker.arm(next ? cursor.nextAt[next.method] - now() : 0);
    return { called: call.method, published: read.length };
  };

  return {
    kind: CHAT_BACKFILL_KIND,
    // Longer than the ticker's longest sleep, so an unfinished walk never idles out.
    idleMs: 15 * 60_000,
    hydrate: async (key) => ({ ...(await walker.load(key, ports)), failures: 0 }),
    handlers: {
      resume: resumeWalk,
      async tick(ctx) {
        try {
          const done = await step(ctx);
          ctx.state.failures = 0;
          return done;
        } catch (err) {
          if (ctx.signal.aborted) throw err;
          const waitMs = backoffMs(STEP_RETRY, ++ctx.state.failures, ports.random);
          ctx.state.ticker.arm(waitMs);
          ctx.log.warn({ err, failures: ctx.state.failures, waitMs }, 'backfill step failed; retrying');
          throw err instanceof AppError ? err : new Internal('backfill step failed', { cause: err });
        }
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
    },
  };
}

function progressOf(c: BackfillCursor, lastError: string | null): Record<string, unknown> {
  const p = c.progress;
  return {
    phase: phaseOf(c),
    channels_listed: p.channels_listed,
    channels_done: p.channels_done,
    messages: p.messages,
    replies: p.replies,
    // INTERFACE §8.21: channels answering not_in_channel are skipped and listed here.
    skipped_count: p.skipped_count,
    skipped_channels: p.skipped,
    group_dms_excluded: p.group_dms_excluded,
    ...((lastError ?? c.lastError) ? { last_error: lastError ?? c.lastError } : {}),
  };
}
