/**
 * The code-host PR-diff backfill walker, key `codehost-backfill/{install_id}` (spec §3.2,
 * ARCHITECTURE "backfill walker"). Each tick: charge the installation's rate gate (one
 * page), make exactly one upstream call (`backfill-step.ts`), register the repos a listing
 * page returned, publish the diff event into the ingest stream (resolves on the JetStream
 * ack), and only then commit the cursor to KV (revision-checked) and the install's
 * `backfill` progress. A crash anywhere repeats at most the last step; the event ids
 * `backfill:pr-diff:{repo_id}:{pr_number}` (and, for a pulls page, one
 * `backfill:pr:{repo_id}:{pr_number}` per PR, INTERFACE §9.5) absorb the repeat.
 *
 * The walker ticks itself through the router (runtime/ticker.ts) and works only while the
 * install is active (spec §3.1). It is started by the admin install and resumed on every
 * shard acquisition for unfinished walks. Repos added to the installation later join the
 * walk (`addRepos`); a finished walk reopens for them.
 */
import { backoffMs } from '../../backoff.js';
import type pg from 'pg';
import { resumeWalk, walkerCursors, type WalkerSlot } from '../walker-slot.js';
import { AppError, ErrorCodes, Internal, isRetryable, RateLimited } from '../../errors.js';
import type { ActorAsk, IngestEvent, KvPort } from '../../runtime/ports.js';
import type { Logger } from '../../log.js';
import {
  initialCursor,
  progressOf,
  SPEC_CAPS,
  type BackfillCaps,
  type BackfillCursor,
} from '../../connectors/codehost/backfill/backfill-cursor.js';
import { backfillDiffEvent, backfillPullEvent } from '../../connectors/codehost/backfill/backfill-event.js';
import { stepBackfill, type StepResult } from '../../connectors/codehost/backfill/backfill-step.js';
import type { CodehostApi, ListedRepo } from '../../connectors/codehost/backfill/codehost-api.js';
import { decodeCursor, encodeCursor } from '../../connectors/codehost/backfill/cursor-codec.js';
import type { ActorContext, ActorDefinition } from '../../runtime/actor-definition.js';
import { getListedRepo, saveListedRepos } from '../../store/backfill-repos.js';
import { getInstallById, setBackfill, type Install } from '../../store/installs.js';
import { codehostRateKey, type RateReport } from './codehost-rate-protocol.js';
import { installKey } from '../install-protocol.js';
import { addReposHandler } from './codehost-backfill-add.js';
import { walkEnd } from './codehost-backfill-end.js';
import {
  backfillCursorKey,
  CODEHOST_BACKFILL_KIND,
  type CodehostBackfillProtocol,
} from './codehost-backfill-protocol.js';

export interface CodehostBackfillPorts {
  pool: pg.Pool;
  log: Logger;
  actors: ActorAsk;
  cursors: KvPort;
  publish(event: IngestEvent): Promise<unknown>;
  /** The code host as this install's GitHub installation; null while the connector is off. */
  api(install: Install): CodehostApi | null;
  /** Repos a listing page returned, after they were registered (indexer sessions start here). */
  onReposListed?(install: Install, repos: ListedRepo[]): Promise<void>;
  /** Injected by tests; the spec's caps otherwise. */
  caps?: BackfillCaps;
  now?: () => number;
}

interface State extends WalkerSlot<BackfillCursor> {
  /** What the last call observed, handed to the rate gate with the next charge. */
  report: RateReport | null;
  /** Consecutive retryable failures, for the backoff. */
  failures: number;
}

const RATE_ASK_TIMEOUT_MS = 10_000;
const BACKOFF_CAP_MS = 5 * 60_000;
/** After a retryable failure of a step (backoff.ts). */
const STEP_RETRY = { firstMs: 1_000, capMs: BACKOFF_CAP_MS };

export function codehostBackfillActor(ports: CodehostBackfillPorts): ActorDefinition<State, CodehostBackfillProtocol> {
  const now = ports.now ?? Date.now;
  const caps = ports.caps ?? SPEC_CAPS;
  if (
    caps.pendingRepos < 1 ||
    caps.pendingPrs < 1 ||
    caps.pendingRepos > SPEC_CAPS.pendingRepos ||
    caps.pendingPrs > SPEC_CAPS.pendingPrs
  ) {
    throw new Error('backfill caps must be between 1 and the spec caps');
  }
  const storeKey = backfillCursorKey;

  const walker = walkerCursors({ cursors: ports.cursors, key: storeKey, encode: encodeCursor, decode: decodeCursor });
  // False: another activation wrote it (a lease overlap); the state then holds what is committed.
  const save = (ctx: ActorContext<WalkerSlot<BackfillCursor>>, cursor: BackfillCursor): Promise<boolean> =>
    walker.save(ctx.state, ctx.key.id[0]!, cursor);

  const progress = (c: BackfillCursor, extra: Record<string, unknown> = {}) => ({ ...progressOf(c), ...extra });

  const { finish, abandon } = walkEnd({ pool: ports.pool, cursors: ports.cursors, key: storeKey, progress });

  const backoff = (ctx: ActorContext<State>) => backoffMs(STEP_RETRY, ++ctx.state.failures);

  const tick = async (ctx: ActorContext<State>): Promise<Record<string, unknown>> => {
    const installId = ctx.key.id[0]!;
    const install = await getInstallById(ports.pool, installId);
    if (install?.status === 'suspended') {
      // INTERFACE §9.4: a suspension pauses the walk; unsuspending continues it (no second backfill).
      ctx.state.ticker.cancel();
      return { stopped: 'install suspended' };
    }
    if (!install || install.connector_id !== 'codehost' || install.status !== 'active') {
      // spec §3.1: the walker works only while the install is active.
      ctx.state.ticker.cancel();
      if (install?.connector_id === 'codehost') await abandon(ctx, install);
      return { stopped: 'install not active' };
    }
    if (install.backfill.state === 'complete' || install.backfill.state === 'failed') {
      ctx.state.ticker.cancel();
      return { stopped: install.backfill.state };
    }
    const cursor = ctx.state.cursor ?? initialCursor();
    if (cursor.phase === 'Done') {
      await finish(ctx, install, cursor, null);
      return { done: 'complete' };
    }
    const api = ports.api(install);
    if (api === null) {
      ctx.state.ticker.arm(BACKOFF_CAP_MS);
      return { waiting: 'connector not enabled' };
    }

    const gate = await ports.actors.ask(
      codehostRateKey(install.external_id),
      { type: 'take', report: ctx.state.report ?? {} },
      { timeoutMs: RATE_ASK_TIMEOUT_MS },
    );
    ctx.state.report = null;
    if (!gate.ok) {
      if (install.backfill.state === 'pending' || ctx.state.failures === 0) {
        await setBackfill(
          ports.pool,
          installId,
          'running',
          progress(cursor, {
            waiting_for: `rate gate (${gate.reason})`,
            resumes_at: new Date(now() + gate.retryAfterMs).toISOString(),
          }),
        );
      }
      ctx.state.ticker.arm(gate.retryAfterMs);
      return { waitingMs: gate.retryAfterMs, reason: gate.reason };
    }

    let step: StepResult;
    try {
      step = await stepBackfill(
        cursor,
        {
          api,
          repoName: async (id) => (await getListedRepo(ports.pool, installId, id))?.full_name ?? null,
          signal: ctx.signal,
        },
        caps,
      );
    } catch (err) {
      return failed(ctx, install, cursor, err);
    }
    ctx.state.report = step.rate ? { observed: step.rate } : null;
    if (step.listed.length > 0) {
      const rows = step.listed.map((r) => ({
        repo_id: r.id,
        full_name: r.full_name,
        clone_url: r.clone_url,
        default_branch: r.default_branch,
      }));
      await saveListedRepos(ports.pool, install, rows);
      await ports
        .onReposListed?.(install, step.listed)
        .catch((err: unknown) =>
          ctx.log.warn({ err }, 'indexer sessions not started for listed repos; a shard resume retries'),
        );
    }
    if (step.pulls) {
      // INTERFACE §9.5: what the listing says of each PR (title, state, body, author).
      const { repo, items } = step.pulls;
      await Promise.all(items.map((p) => ports.publish(backfillPullEvent(install, repo, p))));
    }
    if (step.diff) await ports.publish(backfillDiffEvent(install, step.diff));
    if (!(await save(ctx, step.cursor))) {
      ctx.state.ticker.arm(0);
      return { reloaded: true };
    }
    ctx.state.failures = 0;
    if (step.cursor.phase === 'Done') {
      await finish(ctx, install, step.cursor, null);
      return { called: step.call, done: 'complete' };
    }
    await setBackfill(ports.pool, installId, 'running', progress(step.cursor));
    ctx.state.ticker.arm(0);
    return { called: step.call, phase: step.cursor.phase };
  };

  const failed = async (
    ctx: ActorContext<State>,
    install: Install,
    cursor: BackfillCursor,
    err: unknown,
  ): Promise<Record<string, unknown>> => {
    if (ctx.signal.aborted) throw err;
    const e = err instanceof AppError ? err : new Internal('backfill step failed', { cause: err });
    if (e instanceof RateLimited) {
      // spec §3.2: a secondary limit pauses the walker (and every walker of the installation).
      const report: RateReport = { limitedForS: e.retryAfterS ?? null };
      const answer = await ports.actors.ask(
        codehostRateKey(install.external_id),
        { type: 'report', report },
        { timeoutMs: RATE_ASK_TIMEOUT_MS },
      );
      const wait = Math.max(0, answer.pausedUntilMs - now());
      await setBackfill(
        ports.pool,
        install.install_id,
        'running',
        progress(cursor, { last_error: e.message, resumes_at: new Date(now() + wait).toISOString() }),
      );
      ctx.state.ticker.arm(wait);
      return { rateLimitedMs: wait };
    }
    if (e.code === ErrorCodes.installNotActive || !isRetryable(e)) {
      // An uninstall under way revokes the token upstream before it commits (spec §3.1), so
      // GitHub may answer 401 before the status changes. The install actor runs that
      // uninstall as one message: an ask queued behind it answers once it committed.
      const settled = await ports.actors
        .ask(installKey(install.install_id), { type: 'refresh' }, { timeoutMs: RATE_ASK_TIMEOUT_MS })
        .then(
          () => true,
          (err: unknown) => {
            ctx.log.warn({ err }, 'install actor not reached after a failed step');
            return false;
          },
        );
      const current = await getInstallById(ports.pool, install.install_id);
      if (current && current.status !== 'active') {
        ctx.state.ticker.cancel();
        await abandon(ctx, current);
        return { stopped: 'install not active' };
      }
      // Not known whether an uninstall is under way: retried later rather than ended for good.
      if (!settled) return retry(ctx, install, cursor, e);
    }
    if (!isRetryable(e)) {
      await finish(ctx, install, cursor, e.message);
      return { done: 'failed', code: e.code };
    }
    return retry(ctx, install, cursor, e);
  };

  const retry = async (ctx: ActorContext<State>, install: Install, cursor: BackfillCursor, e: AppError) => {
    const wait = backoff(ctx);
    ctx.log.warn({ err: e, waitMs: Math.round(wait) }, 'backfill step failed; retrying');
    await setBackfill(ports.pool, install.install_id, 'running', progress(cursor, { last_error: e.message }));
    ctx.state.ticker.arm(wait);
    return { retryInMs: Math.round(wait), code: e.code };
  };

  const addRepos = addReposHandler({ pool: ports.pool, cursors: ports.cursors, key: storeKey, caps, progress, save });

  return {
    kind: CODEHOST_BACKFILL_KIND,
    // Longer than the ticker's longest sleep (5 min), so an unfinished walk never idles out.
    idleMs: 15 * 60_000,
    async hydrate(key) {
      return { ...(await walker.load(key, ports)), report: null, failures: 0 };
    },
    handlers: {
      resume: resumeWalk,
      addRepos,
      async tick(ctx) {
        try {
          return await tick(ctx);
        } catch (err) {
          // Our own side failed (NATS publish, Postgres, KV): the step did not commit; try it again.
          if (!ctx.signal.aborted) ctx.state.ticker.arm(backoff(ctx));
          throw err instanceof AppError ? err : new Internal('backfill step failed', { cause: err });
        }
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
    },
  };
}
