/**
 * The code host's walkers wired together: the PR-diff backfill walker, the installation
 * rate gate and the repo indexer sessions (actors), the backfill starter the admin install
 * calls, the durable effects of events (slash commands, index sync after a push to the
 * default branch, repos added to or removed from the installation; INTERFACE §9.4) and the resume of
 * unfinished walks and sessions on shard acquisition.
 * `wiring/codehost.ts` plugs these in; everything reaches other actors via `deps.actors`.
 */
import { codehostBackfillActor } from '../actors/codehost/codehost-backfill.js';
import { backfillCursorKey, codehostBackfillKey } from '../actors/codehost/codehost-backfill-protocol.js';
import { codehostRateActor } from '../actors/codehost/codehost-rate.js';
import { DEFAULT_INDEXER_TIMINGS, type IndexerTimings } from '../actors/codehost/indexer-ports.js';
import { indexerSessionKey } from '../actors/codehost/indexer-protocol.js';
import { indexerSessionActor } from '../actors/codehost/indexer-session.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { ActorKind } from '../runtime/actor-definition.js';
import type { ActorKey } from '../runtime/names.js';
import { listUnfinishedCodehostBackfills } from '../store/backfill-repos.js';
import type { Install } from '../store/installs.js';
import { admitRepo, listUnsettledSessions } from '../store/repo-index-state.js';
import type { DriverContext, EffectSpec } from '../connectors/driver.js';
import type { ModuleDeps } from './module.js';
import type { CodehostWrite } from '../connectors/codehost/emit-schema.js';
import { installRefOf, type GithubClients, type InstallRef } from '../connectors/codehost/github-client.js';
import { checkTemplate } from '../connectors/codehost/indexer/daemon-url.js';
import { pushToDefaultBranch, syncOnPush } from '../effects/codehost/sync-on-push.js';
import type { WriteOutcome } from '../connectors/codehost/perform-write.js';
import { answerSlashCommand, slashCommandOf } from '../effects/codehost/answer-slash.js';
import { replyExists } from '../connectors/codehost/slash/find-reply.js';
import type { ListedRepo } from '../connectors/codehost/backfill/codehost-api.js';
import { applyRepositoryChanges, repositoryChangesOf } from '../connectors/codehost/backfill/installation-repos.js';
import { octokitApi } from '../connectors/codehost/backfill/octokit-api.js';

export interface WalkerParts {
  actors: ActorKind[];
  /** The admin install's hook (INTERFACE §3: "the PR-diff backfill starts"). */
  startBackfill(install: Install): Promise<void>;
  /** Slash-command replies, index syncs after pushes and repo changes: effects of an event (driver.ts). */
  effectsOf(install: Install, event: IngestEvent): EffectSpec[];
  runEffect(ctx: DriverContext, effect: { kind: string; event: IngestEvent; firstAttempt: boolean }): Promise<void>;
  resumeShards(shards: ReadonlySet<number>): Promise<void>;
}

export interface WalkerDeps {
  deps: ModuleDeps;
  /** Null while the connector is not enabled and fully configured. */
  clients: GithubClients | null;
  write(install: InstallRef, w: CodehostWrite, signal: AbortSignal): Promise<WriteOutcome>;
  timings?: Partial<IndexerTimings>;
}

const ASK_TIMEOUT_MS = 10_000;
const SLASH_EFFECT = 'slash_reply';
const SYNC_EFFECT = 'index_sync';
const REPOS_EFFECT = 'repo_changes';
/**
 * A walk or session is resumed on a shard acquisition when this deployment has worked on it
 * (its cursor is in our KV, its lock names our namespace) or when nobody has touched it for
 * this long (its starter died before the first step). Within one deployment resuming a live
 * actor is a no-op; the rule keeps deployments that share a database (test runs) apart.
 */
const UNTOUCHED_GRACE_MS = 2 * 60_000;

export function attachWalkers(w: WalkerDeps): WalkerParts {
  const { deps, clients } = w;
  const { config, pool } = deps;
  const log = deps.log.child({ connector: 'codehost' });
  const timings = { ...DEFAULT_INDEXER_TIMINGS, ...w.timings };
  const appId = config.codehost.appId;
  const template = config.codehost.indexerUrlTemplate;
  const shape = template === null ? null : checkTemplate(template);
  if (shape && !shape.ok) {
    // Every repo's sync and slash command will say so too; this names the setting at start.
    log.warn(
      { setting: 'SERVICE_INDEXER_DAEMON_URL_TEMPLATE', reason: shape.reason },
      'indexer daemon URL template is refused; no repo can be indexed',
    );
  }

  /** Listed repos get an indexer session each, up to the tenant's cap (spec §8); the rest are not indexed. */
  const startSessions = async (install: Install, repos: Array<Pick<ListedRepo, 'id' | 'full_name' | 'clone_url'>>) => {
    for (const r of repos) {
      const a = await admitRepo(pool, {
        installId: install.install_id,
        tenantId: install.tenant_id,
        repoId: r.id,
        repoFullName: r.full_name,
        cloneUrl: r.clone_url,
        cap: config.codehost.repoCapPerTenant,
      });
      if (!a.admitted && a.reason === 'removed') continue;
      if (!a.admitted) {
        log.info(
          { installId: install.install_id, used: a.used, cap: a.cap },
          'tenant repo cap reached; further repos are not indexed',
        );
        return;
      }
      if (a.state.status !== 'pending') continue;
      void deps.actors
        .ask(indexerSessionKey(install.install_id, r.id), { type: 'resume' }, { timeoutMs: ASK_TIMEOUT_MS })
        .catch((err: unknown) =>
          log.warn({ err, repo: r.full_name }, 'indexer session not started; a shard resume retries'),
        );
    }
  };

  const actors: ActorKind[] = [
    codehostBackfillActor({
      pool,
      log,
      actors: deps.actors,
      cursors: deps.cursors,
      publish: (e) => deps.publish(e),
      api: (install) => (clients === null ? null : octokitApi(clients.forInstall(installRefOf(install)))),
      onReposListed: startSessions,
    }),
    codehostRateActor({ kv: deps.cursors }),
    indexerSessionActor({
      pool,
      log,
      actors: deps.actors,
      lockOwner: `${config.namespace}/${config.nodeId}`,
      template,
      repoCap: config.codehost.repoCapPerTenant,
      timings,
      accessToken: async (install) => {
        if (clients === null) throw new Error('the code-host connector is not enabled');
        return (await clients.installationToken(installRefOf(install))).token;
      },
    }),
  ];

  const resume = async (what: string, keys: ActorKey[]) => {
    const results = await Promise.allSettled(
      keys.map((k) => deps.actors.ask(k, { type: 'resume' }, { timeoutMs: ASK_TIMEOUT_MS })),
    );
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0)
      log.warn({ failed, of: keys.length }, `some ${what} did not resume; the resume sweep retries within a minute`);
  };

  return {
    actors,
    async startBackfill(install) {
      await deps.actors.ask(codehostBackfillKey(install.install_id), { type: 'resume' }, { timeoutMs: ASK_TIMEOUT_MS });
    },
    effectsOf(_install, event) {
      const out: EffectSpec[] = [];
      const slash = slashCommandOf(event);
      // One reply per slash comment (INTERFACE §9.4): its effects share the comment's key.
      if (slash !== null) out.push({ kind: SLASH_EFFECT, serialKey: `comment:${slash.place.in}:${slash.commentId}` });
      const push = pushToDefaultBranch(event);
      if (push !== null) out.push({ kind: SYNC_EFFECT, serialKey: `repo:${push.repoId}` });
      if (repositoryChangesOf(event) !== null) out.push({ kind: REPOS_EFFECT, serialKey: 'installation-repos' });
      return out;
    },
    async runEffect(ctx, { kind, event, firstAttempt }) {
      if (clients === null || appId === null) return;
      const octokit = () => clients.forInstall(installRefOf(ctx.install));
      if (kind === SLASH_EFFECT) {
        await answerSlashCommand(
          {
            pool,
            actors: deps.actors,
            write: w.write,
            toolTimeoutMs: timings.toolTimeoutMs,
            replyExists: (_ref, place, marker, since, signal) =>
              replyExists(octokit(), appId, place, marker, since, signal),
          },
          ctx,
          event,
          { inserted: firstAttempt },
        );
      } else if (kind === SYNC_EFFECT) {
        await syncOnPush(deps.actors, ctx, event, timings.rpcTimeoutMs * 2 + ASK_TIMEOUT_MS);
      } else if (kind === REPOS_EFFECT) {
        await applyRepositoryChanges(
          {
            pool,
            startSessions,
            queueInBackfill: async (install, repoIds) => {
              await deps.actors.ask(
                codehostBackfillKey(install.install_id),
                { type: 'addRepos', repoIds },
                { timeoutMs: ASK_TIMEOUT_MS },
              );
            },
          },
          ctx,
          event,
        );
      }
    },
    async resumeShards(shards) {
      if (!config.codehost.enabled) return;
      const stale = (iso: string) => Date.parse(iso) < Date.now() - UNTOUCHED_GRACE_MS;
      const walks: ActorKey[] = [];
      for (const b of await listUnfinishedCodehostBackfills(pool)) {
        const key = codehostBackfillKey(b.install_id);
        if (!shards.has(deps.shardOf(key))) continue;
        if (stale(b.touched_at) || (await deps.cursors.get(backfillCursorKey(b.install_id))) !== null) walks.push(key);
      }
      const ours = `${config.namespace}/`;
      const sessions = (await listUnsettledSessions(pool))
        .filter((s) => (s.lock_owner ?? s.retry_owner)?.startsWith(ours) || stale(s.updated_at))
        .map((s) => indexerSessionKey(s.install_id, s.repo_id))
        .filter((k) => shards.has(deps.shardOf(k)));
      await resume('backfill walkers', walks);
      await resume('indexer sessions', sessions);
    },
  };
}
