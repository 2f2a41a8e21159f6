/**
 * The repo indexer session, key `indexer/{install_id}/{repo_id}` (ARCHITECTURE "Actors";
 * spec §4.4, §8; INTERFACE §6): one per `(install, repo)`, owning that repo's daemon URL,
 * its index lifecycle in `repo_index_state`, and the slash-command tool calls to it.
 *
 * - `sync` (after install, after a push to the default branch): admits the repo under the
 *   tenant's repo cap, builds the daemon URL (refused URLs never reach the network), and
 *   calls `index/sync` with a fresh installation token. While the daemon says `indexing`
 *   the session polls `index/status` on its ticker.
 * - The indexing lock: `lock_owner` / `lock_expires_at` on the row. A sync takes it for
 *   5 minutes and every poll that finds the daemon still indexing extends it by another 5
 *   (a heartbeat), so a first index of a very large repo (hours for ~500 000 files) runs
 *   past the 5-minute default (spec §8) while a daemon that stops answering is noticed: a
 *   lock that lapses between successful polls marks the index `failed`. The actor itself is
 *   single-activation cluster-wide (shard leases); the lock is about the daemon's liveness,
 *   and a new owner after a shard move takes it over on its first poll.
 * - A failed index (daemon error, refused URL, no token, lapsed lock, `failed` status) is
 *   retried on the ticker with backoff (`index-outcome.ts`), its schedule on the row so a
 *   shard move resumes it; bounded, and never for an install that is no longer active.
 * - An install that is no longer active (uninstalled) is not followed: the first tick that
 *   sees it releases the lock, drops the retry and stops the ticker, without a daemon call
 *   (INTERFACE §6 has no stop call). A repo removed from the installation has no row and
 *   is refused admission (`repo-index-state.ts`), so its ticks find nothing to do.
 */
import { backoffCeilingMs, type BackoffPolicy } from '../../backoff.js';
import { callTool, indexStatus, syncIndex, type ToolName } from '../../connectors/codehost/indexer/daemon-client.js';
import { failedPatch, readyPatch, UNFOLLOWED_PATCH } from '../../connectors/codehost/indexer/index-outcome.js';
import { describeUpstream } from '../../connectors/codehost/upstream-error.js';
import type { ActorContext, ActorDefinition } from '../../runtime/actor-definition.js';
import { createTicker, type Ticker } from '../../runtime/ticker.js';
import {
  getIndexState,
  updateIndexState,
  type IndexStatePatch,
  type RepoIndexState,
} from '../../store/repo-index-state.js';
import { DEFAULT_INDEXER_TIMINGS, type IndexerSessionPorts, type IndexerTimings } from './indexer-ports.js';
import {
  INDEXER_SESSION_KIND,
  type IndexerSessionProtocol,
  type RepoHint,
  type SyncAnswer,
  type ToolAnswer,
} from './indexer-protocol.js';
import { indexerRepos } from './indexer-repo.js';

interface State {
  ticker: Ticker;
  polls: number;
}

export function indexerSessionActor(ports: IndexerSessionPorts): ActorDefinition<State, IndexerSessionProtocol> {
  const t: IndexerTimings = { ...DEFAULT_INDEXER_TIMINGS, ...ports.timings };
  const now = ports.now ?? Date.now;
  const retryPolicy = { baseMs: t.retryBaseMs, maxMs: t.retryMaxMs, maxRetries: t.maxRetries };
  const pollPolicy: BackoffPolicy = { firstMs: t.firstPollMs, capMs: t.maxPollMs };
  const ids = (ctx: ActorContext<State>) => ({ installId: ctx.key.id[0]!, repoId: Number(ctx.key.id[1]) });

  const { activeInstall: installOf, repoOf, admit, urlFor } = indexerRepos(ports);
  const activeInstall = (ctx: ActorContext<State>) => installOf(ids(ctx).installId);

  const sync = async (ctx: ActorContext<State>, msg: { sha?: string | null; repo?: RepoHint }): Promise<SyncAnswer> => {
    const { installId, repoId } = ids(ctx);
    const row = await getIndexState(ports.pool, installId, repoId);
    const install = await activeInstall(ctx);
    if (!install) return stopFollowing(ctx, row);
    const sha = typeof msg.sha === 'string' ? msg.sha : null;
    if (row && unchanged(row, sha)) return { status: 'unchanged' };
    const repo = await repoOf(installId, repoId, msg.repo, row);
    if (!repo) return { status: 'failed', error: 'the repository is not known to this install yet' };
    const admission = row ? { admitted: true as const, state: row } : await admit(install, repoId, repo);
    if (!admission.admitted)
      return admission.reason === 'capped'
        ? { status: 'capped', used: admission.used, cap: admission.cap }
        : { status: 'removed' };
    const retries = admission.state.retries;

    const url = urlFor(installId, repoId);
    if (!url.ok) return markFailed(ctx, retries, `daemon URL refused: ${url.reason}`, {});
    let token: string;
    try {
      token = await ports.accessToken(install, ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      return markFailed(ctx, retries, `no installation token for the clone: ${describeUpstream(err).message}`, {
        daemon_url: url.url,
      });
    }
    await updateIndexState(ports.pool, installId, repoId, {
      repo_full_name: repo.full_name,
      clone_url: repo.clone_url,
      daemon_url: url.url,
      target_sha: sha,
      sync_requested_at: now(),
      retry_at: null,
      retry_owner: null,
    });
    const res = await syncIndex(
      url.url,
      { repo_full_name: repo.full_name, clone_url: repo.clone_url, access_token: token, sha },
      { timeoutMs: t.rpcTimeoutMs, signal: ctx.signal },
    );
    if (!res.ok) return markFailed(ctx, retries, res.failure.message, { daemon_url: url.url });
    if (res.status === 'indexing') {
      await updateIndexState(ports.pool, installId, repoId, {
        status: 'indexing',
        error: null,
        lock_owner: ports.lockOwner,
        lock_expires_at: now() + t.lockMs,
      });
      ctx.state.polls = 0;
      ctx.state.ticker.arm(t.firstPollMs);
    } else {
      await settle(ctx, retries, res.status, res.sha ?? sha, null);
    }
    return { status: res.status };
  };

  const poll = async (ctx: ActorContext<State>): Promise<Record<string, unknown>> => {
    const { installId, repoId } = ids(ctx);
    const row = await getIndexState(ports.pool, installId, repoId);
    if (!row || row.status !== 'indexing') return { status: row?.status ?? 'none' };
    if (!(await activeInstall(ctx))) return stopFollowing(ctx, row);
    const url = urlFor(installId, repoId);
    if (!url.ok) return markFailed(ctx, row.retries, `daemon URL refused: ${url.reason}`, {});
    const res = await indexStatus(url.url, { timeoutMs: t.rpcTimeoutMs, signal: ctx.signal });
    if (!res.ok) {
      const lapsed = row.lock_expires_at === null || Date.parse(row.lock_expires_at) <= now();
      if (lapsed)
        return markFailed(ctx, row.retries, `the indexer daemon stopped reporting progress: ${res.failure.message}`, {
          daemon_url: url.url,
        });
      ctx.state.ticker.arm(nextPoll(ctx));
      return { status: 'indexing', error: res.failure.message };
    }
    if (res.status === 'indexing') {
      // The heartbeat: the daemon is alive and busy, so the lock outlives the 5-minute default.
      await updateIndexState(ports.pool, installId, repoId, {
        progress: res.progress,
        lock_owner: ports.lockOwner,
        lock_expires_at: now() + t.lockMs,
      });
      ctx.state.ticker.arm(nextPoll(ctx));
      return { status: 'indexing' };
    }
    await settle(ctx, row.retries, res.status, res.lastIndexedSha, res.progress);
    return { status: res.status };
  };

  const settle = async (
    ctx: ActorContext<State>,
    retries: number,
    status: 'ready' | 'failed',
    sha: string | null,
    progress: unknown,
  ) => {
    const extra: IndexStatePatch = progress !== null && progress !== undefined ? { progress } : {};
    if (status === 'failed') await markFailed(ctx, retries, 'the indexer daemon reported a failed index', extra);
    else
      await updateIndexState(ports.pool, ids(ctx).installId, ids(ctx).repoId, { ...extra, ...readyPatch(sha, now()) });
  };

  /** The index failed: the next automatic retry is scheduled unless the policy gave up (index-outcome.ts). */
  const markFailed = async (
    ctx: ActorContext<State>,
    retriesBefore: number,
    error: string,
    extra: IndexStatePatch,
  ): Promise<SyncAnswer & { status: 'failed' }> => {
    const { installId, repoId } = ids(ctx);
    const { patch, retryInMs } = failedPatch(retriesBefore, error, {
      policy: retryPolicy,
      owner: ports.lockOwner,
      nowMs: now(),
      random: ports.random,
    });
    await updateIndexState(ports.pool, installId, repoId, { ...extra, ...patch });
    if (retryInMs !== null) ctx.state.ticker.arm(retryInMs);
    else
      ctx.log.warn(
        { retries: patch.retries, error },
        'index failed again; no more automatic retries until a push or a slash command',
      );
    return { status: 'failed', error };
  };

  /** The install is no longer active: release the lock, drop any retry, tick no more. */
  const stopFollowing = async (ctx: ActorContext<State>, row: RepoIndexState | null): Promise<SyncAnswer> => {
    ctx.state.ticker.cancel();
    if (row && (row.lock_owner !== null || row.retry_at !== null))
      await updateIndexState(ports.pool, row.install_id, row.repo_id, UNFOLLOWED_PATCH);
    return { status: 'inactive' };
  };

  /**
   * The poll of a running index stretches from firstPollMs to maxPollMs (backoff.ts's ceiling,
   * without its jitter): it paces one session's own daemon rather than spreading callers that
   * failed together, and a fixed schedule keeps the lock heartbeat's spacing predictable.
   */
  const nextPoll = (ctx: ActorContext<State>) => backoffCeilingMs(pollPolicy, ++ctx.state.polls);

  const tool = async (
    ctx: ActorContext<State>,
    msg: { name: ToolName; arguments: Record<string, string>; repo?: RepoHint },
  ): Promise<ToolAnswer> => {
    const { installId, repoId } = ids(ctx);
    const install = await activeInstall(ctx);
    if (!install) return { ok: false, kind: 'inactive', message: 'the install is not active' };
    let row = await getIndexState(ports.pool, installId, repoId);
    if (!row) {
      const repo = await repoOf(installId, repoId, msg.repo, null);
      if (!repo) return { ok: false, kind: 'no_daemon', message: 'the repository is not known to this install yet' };
      const admission = await admit(install, repoId, repo);
      if (!admission.admitted && admission.reason === 'removed') {
        return { ok: false, kind: 'removed', message: 'the repository was removed from the GitHub App installation' };
      }
      if (!admission.admitted) {
        return {
          ok: false,
          kind: 'capped',
          message:
            `this tenant already has ${admission.used} indexed repositories, its cap of ` +
            `${admission.cap} (SERVICE_REPO_CAP_PER_TENANT)`,
        };
      }
      row = admission.state;
    }
    // A repo never synced (or whose sync failed) gets one now, after this answer.
    if (row.status === 'failed')
      await updateIndexState(ports.pool, installId, repoId, { retry_at: now(), retry_owner: ports.lockOwner });
    if (row.status === 'pending' || row.status === 'failed') ctx.state.ticker.arm(0);
    const url = urlFor(installId, repoId);
    if (!url.ok) return { ok: false, kind: 'no_daemon', message: `the indexer daemon URL was refused: ${url.reason}` };
    const res = await callTool(url.url, msg.name, msg.arguments, { timeoutMs: t.toolTimeoutMs, signal: ctx.signal });
    return res.ok ? { ok: true, text: res.text } : { ok: false, kind: res.failure.kind, message: res.failure.message };
  };

  return {
    kind: INDEXER_SESSION_KIND,
    // Longer than the ticker's longest sleep, so a running index is never left unpolled.
    idleMs: 15 * 60_000,
    async hydrate(key) {
      const log = ports.log.child({ actor: `${INDEXER_SESSION_KIND}/${key.id.join('/')}` });
      const ticker = createTicker({
        fire: () => ports.actors.ask(key, { type: 'tick' }, { timeoutMs: t.rpcTimeoutMs * 2 + 10_000 }),
        onError: (err) => log.warn({ err }, 'indexer session tick failed; the next tick or a shard resume picks it up'),
      });
      return { ticker, polls: 0 };
    },
    handlers: {
      sync,
      tool,
      /** Due work: a pending repo syncs, a failed one whose retry is due syncs again, an indexing one polls. */
      async tick(ctx) {
        const { installId, repoId } = ids(ctx);
        const row = await getIndexState(ports.pool, installId, repoId);
        if (row?.status === 'indexing') return poll(ctx);
        if (row?.status === 'pending') return sync(ctx, { sha: row.target_sha, repo: undefined });
        if (row?.status === 'failed' && row.retry_at !== null) {
          // The ticker sleeps at most 5 minutes; a longer backoff wakes up early and waits on.
          const wait = Date.parse(row.retry_at) - now();
          if (wait <= 0) return sync(ctx, { sha: row.target_sha, repo: undefined });
          ctx.state.ticker.arm(wait);
          return { status: 'failed', retryInMs: wait };
        }
        return { status: row?.status ?? 'none' };
      },
      /** On shard acquisition: pick up pending and indexing sessions, and failed ones with a retry scheduled. */
      async resume(ctx) {
        if (ctx.state.ticker.dueAt === null) ctx.state.ticker.arm(0);
        return { ok: true };
      },
    },
    async onPassivate({ state }) {
      state.ticker.stop();
    },
  };
}

/** Nothing to do: already indexed at that sha, or already indexing it (null: the default branch head). */
function unchanged(row: RepoIndexState, sha: string | null): boolean {
  if (row.status === 'indexing') return sha === null || row.target_sha === sha;
  if (row.status === 'ready') return sha === null || row.last_indexed_sha === sha;
  return false;
}
