/**
 * `installation_repositories` webhooks (`added` / `removed`) for one install, after the
 * event committed. The webhook route fans a delivery out to every active install bound to
 * the installation (one per tenant), so each install applies the change to itself.
 *
 * - Added repos get what install-time repos get (spec §3.2, §8; INTERFACE §6): registered
 *   in the install's repo registry, an indexer session each (`index/sync`) within the
 *   tenant's repo cap, and their PRs in the PR-diff backfill.
 * - Removed repos are marked removed and lose their `repo_index_state` row (no new status:
 *   a repo with no row is not indexed), so their sessions stop polling on their next tick,
 *   are refused admission, and a slash command there answers that the repo is not indexed.
 *
 * Idempotent, as afterCommit reruns on redelivery: registration and removal are upserts,
 * admission finds an existing row, and the walker never queues a repo twice.
 */
import type pg from 'pg';
import type { IngestEvent } from '../../../runtime/ports.js';
import { addRepos, type WebhookRepo } from '../../../store/backfill-repos.js';
import type { Install } from '../../../store/installs.js';
import { removeRepos } from '../../../store/repo-index-state.js';
import type { DriverContext } from '../../driver.js';
import type { ListedRepo } from './codehost-api.js';

export interface RepoChangeDeps {
  pool: pg.Pool;
  /** Admits the repos under the tenant's cap and starts their sessions (as after a listing page). */
  startSessions(install: Install, repos: Array<Pick<ListedRepo, 'id' | 'full_name' | 'clone_url'>>): Promise<void>;
  /** Queues the repos' PRs in the install's PR-diff backfill walk. */
  queueInBackfill(install: Install, repoIds: number[]): Promise<void>;
}

interface Payload {
  repositories_added?: unknown;
  repositories_removed?: unknown;
  sender?: { html_url?: unknown } | null;
}

/** `owner/repo` in GitHub's alphabet; `.` and `..` are not names (they would move a clone URL's path). */
const FULL_NAME = /^(?!\.{1,2}\/)[A-Za-z0-9_.-]{1,100}\/(?!\.{1,2}$)[A-Za-z0-9_.-]{1,100}$/;

/**
 * Where clones come from: the payload's repo entries carry no clone URL, so it is built on
 * the web origin of the sender's profile (github.com, or a GitHub Enterprise host). A later
 * listing of the installation's repos replaces it with GitHub's own.
 */
function webOrigin(p: Payload): string {
  const html = p.sender?.html_url;
  const u = typeof html === 'string' && URL.canParse(html) ? new URL(html) : null;
  return u && (u.protocol === 'https:' || u.protocol === 'http:') ? u.origin : 'https://github.com';
}

function reposOf(list: unknown, origin: string): WebhookRepo[] {
  if (!Array.isArray(list)) return [];
  const out: WebhookRepo[] = [];
  for (const r of list as Array<{ id?: unknown; full_name?: unknown } | null>) {
    const id = r?.id;
    const name = r?.full_name;
    if (
      typeof id !== 'number' ||
      !Number.isSafeInteger(id) ||
      id <= 0 ||
      typeof name !== 'string' ||
      !FULL_NAME.test(name)
    )
      continue;
    out.push({ repo_id: id, full_name: name, clone_url: `${origin}/${name}.git` });
  }
  return out;
}

/** The repos an `installation_repositories` event adds and removes, or null for any other event. */
export function repositoryChangesOf(event: IngestEvent): { added: WebhookRepo[]; removed: WebhookRepo[] } | null {
  if (event.kind !== 'installation_repositories.added' && event.kind !== 'installation_repositories.removed')
    return null;
  const p = event.payload as Payload;
  const origin = webOrigin(p);
  return { added: reposOf(p.repositories_added, origin), removed: reposOf(p.repositories_removed, origin) };
}

export async function applyRepositoryChanges(
  deps: RepoChangeDeps,
  ctx: DriverContext,
  event: IngestEvent,
): Promise<void> {
  const changes = repositoryChangesOf(event);
  if (!changes || ctx.install.status !== 'active') return;
  const { install, log } = ctx;
  if (changes.removed.length > 0) {
    const unindexed = await removeRepos(deps.pool, install, changes.removed);
    log.info(
      { installId: install.install_id, removed: changes.removed.length, unindexed: unindexed.length },
      'repos removed from the installation are no longer indexed',
    );
  }
  if (changes.added.length > 0) {
    await addRepos(deps.pool, install, changes.added);
    await deps.startSessions(
      install,
      changes.added.map((r) => ({ id: r.repo_id, full_name: r.full_name, clone_url: r.clone_url })),
    );
    await deps.queueInBackfill(
      install,
      changes.added.map((r) => r.repo_id),
    );
    log.info(
      { installId: install.install_id, added: changes.added.length },
      'repos added to the installation: indexing and PR-diff backfill',
    );
  }
}
