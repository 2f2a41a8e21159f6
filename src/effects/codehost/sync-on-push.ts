/**
 * spec §4.4, INTERFACE §6: after a push to a repo's default branch, its indexer session
 * syncs the daemon to the pushed sha. Every install bound to the installation has its own
 * daemon per repo, so each one's push event syncs its own session.
 */
import type { ActorAsk, IngestEvent } from '../../runtime/ports.js';
import { indexerSessionKey, type SyncAnswer } from '../../actors/codehost/indexer-protocol.js';
import type { DriverContext } from '../../connectors/driver.js';

interface PushPayload {
  ref?: unknown;
  after?: unknown;
  deleted?: unknown;
  repository?: { id?: unknown; full_name?: unknown; clone_url?: unknown; default_branch?: unknown };
}

const SHA = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;

/** What to sync for a push event, or null when it is not a push to the default branch. */
export function pushToDefaultBranch(
  event: IngestEvent,
): { repoId: number; sha: string; repo: { full_name: string; clone_url: string } } | null {
  if (event.kind !== 'push') return null;
  const p = event.payload as PushPayload;
  const r = p.repository;
  if (!r || typeof r.id !== 'number' || typeof r.full_name !== 'string' || typeof r.default_branch !== 'string')
    return null;
  if (p.ref !== `refs/heads/${r.default_branch}` || p.deleted === true) return null;
  if (typeof p.after !== 'string' || !SHA.test(p.after) || /^0+$/.test(p.after)) return null;
  const cloneUrl = typeof r.clone_url === 'string' ? r.clone_url : `https://github.com/${r.full_name}.git`;
  return { repoId: r.id, sha: p.after, repo: { full_name: r.full_name, clone_url: cloneUrl } };
}

export async function syncOnPush(
  actors: ActorAsk,
  ctx: DriverContext,
  event: IngestEvent,
  timeoutMs: number,
): Promise<SyncAnswer | null> {
  const push = pushToDefaultBranch(event);
  if (!push || ctx.install.status !== 'active') return null;
  const answer = await actors.ask(
    indexerSessionKey(ctx.install.install_id, push.repoId),
    { type: 'sync', sha: push.sha, repo: push.repo },
    { timeoutMs },
  );
  if (answer.status === 'failed')
    ctx.log.warn(
      { repo: push.repo.full_name, sha: push.sha, error: 'error' in answer ? answer.error : undefined },
      'index sync after push failed',
    );
  return answer;
}
