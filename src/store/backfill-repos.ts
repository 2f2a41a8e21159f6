/**
 * The code-host repos an install's PR-diff backfill listed (`codehost_repos`): the walker's
 * cursor keeps repo ids only, to stay under 100 KB at the caps (spec §8), and reads names
 * here; indexer sessions read the clone URL. Repos added to the installation later
 * (`installation_repositories.added`) are registered here too, and removed ones are kept
 * with `removed_at` set, so neither the walk nor an indexer session takes them up again.
 * Also the installs whose walk is unfinished, for resuming walkers when a shard moves.
 */
import { isUuid, toIso, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface ListedRepoRow {
  repo_id: number;
  full_name: string;
  clone_url: string;
  /** Null for a repo known from an `installation_repositories` webhook only. */
  default_branch: string | null;
}

/**
 * Upsert one listing page's repos (idempotent: a replayed step writes the same rows). A
 * listing never clears `removed_at`: a page read before a removal must not undo it.
 */
export async function saveListedRepos(
  q: Queryable,
  install: { install_id: string; tenant_id: string },
  repos: ListedRepoRow[],
): Promise<void> {
  if (repos.length === 0) return;
  await q.query(
    `INSERT INTO codehost_repos (install_id, tenant_id, repo_id, full_name, clone_url, default_branch)
     SELECT $1, $2, r.repo_id, r.full_name, r.clone_url, r.default_branch
     FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[]) AS r (repo_id, full_name, clone_url, default_branch)
     ON CONFLICT (install_id, repo_id) DO UPDATE
       SET full_name = EXCLUDED.full_name, clone_url = EXCLUDED.clone_url,
           default_branch = coalesce(EXCLUDED.default_branch, codehost_repos.default_branch), listed_at = now()`,
    [
      install.install_id,
      install.tenant_id,
      repos.map((r) => r.repo_id),
      repos.map((r) => sanitizeText(r.full_name)),
      repos.map((r) => sanitizeText(r.clone_url)),
      repos.map((r) => (r.default_branch === null ? null : sanitizeText(r.default_branch))),
    ],
  );
}

/** A repo as an `installation_repositories` webhook names it (the clone URL derived). */
export interface WebhookRepo {
  repo_id: number;
  full_name: string;
  clone_url: string;
}

/**
 * Repos added to the installation (`installation_repositories.added`): registered, and no
 * longer removed. The webhook names a repo but not its clone URL, so a known repo keeps the
 * one its listing gave unless it was renamed.
 */
export async function addRepos(
  q: Queryable,
  install: { install_id: string; tenant_id: string },
  repos: WebhookRepo[],
): Promise<void> {
  if (repos.length === 0) return;
  await q.query(
    `INSERT INTO codehost_repos (install_id, tenant_id, repo_id, full_name, clone_url)
     SELECT $1, $2, r.repo_id, r.full_name, r.clone_url
     FROM unnest($3::bigint[], $4::text[], $5::text[]) AS r (repo_id, full_name, clone_url)
     ON CONFLICT (install_id, repo_id) DO UPDATE
       SET clone_url = CASE WHEN codehost_repos.full_name = EXCLUDED.full_name
                            THEN codehost_repos.clone_url ELSE EXCLUDED.clone_url END,
           full_name = EXCLUDED.full_name, removed_at = NULL`,
    [
      install.install_id,
      install.tenant_id,
      repos.map((r) => r.repo_id),
      repos.map((r) => sanitizeText(r.full_name)),
      repos.map((r) => sanitizeText(r.clone_url)),
    ],
  );
}

/**
 * Marks repos removed from the installation (registering ones never listed); see `removeRepos` in repo-index-state.ts.
 */
export async function markReposRemoved(
  q: Queryable,
  install: { install_id: string; tenant_id: string },
  repos: WebhookRepo[],
): Promise<void> {
  if (repos.length === 0) return;
  await q.query(
    `INSERT INTO codehost_repos (install_id, tenant_id, repo_id, full_name, clone_url, removed_at)
     SELECT $1, $2, r.repo_id, r.full_name, r.clone_url, now()
     FROM unnest($3::bigint[], $4::text[], $5::text[]) AS r (repo_id, full_name, clone_url)
     ON CONFLICT (install_id, repo_id) DO UPDATE SET removed_at = now()`,
    [
      install.install_id,
      install.tenant_id,
      repos.map((r) => r.repo_id),
      repos.map((r) => sanitizeText(r.full_name)),
      repos.map((r) => sanitizeText(r.clone_url)),
    ],
  );
}

/** A registered repo still in the installation, or null (unknown, or removed). */
export async function getListedRepo(q: Queryable, installId: string, repoId: number): Promise<ListedRepoRow | null> {
  if (!isUuid(installId) || !Number.isSafeInteger(repoId)) return null;
  const { rows } = await q.query<{
    repo_id: string;
    full_name: string;
    clone_url: string;
    default_branch: string | null;
  }>(
    `SELECT repo_id, full_name, clone_url, default_branch FROM codehost_repos
     WHERE install_id = $1 AND repo_id = $2 AND removed_at IS NULL`,
    [installId, repoId],
  );
  const r = rows[0];
  return r ? { ...r, repo_id: Number(r.repo_id) } : null;
}

export interface UnfinishedBackfill {
  install_id: string;
  /** When its backfill state last changed (its creation when never touched). */
  touched_at: string;
}

/** Active code-host installs whose backfill has not ended: the walkers to resume on a shard move. */
export async function listUnfinishedCodehostBackfills(q: Queryable): Promise<UnfinishedBackfill[]> {
  const { rows } = await q.query<{ install_id: string; touched_at: Date }>(
    `SELECT install_id, coalesce(backfill_updated_at, created_at) AS touched_at FROM installs
     WHERE connector_id = 'codehost' AND status = 'active' AND backfill_state IN ('pending', 'running')
     ORDER BY created_at`,
  );
  return rows.map((r) => ({ install_id: r.install_id, touched_at: toIso(r.touched_at) }));
}
