/**
 * The code-host repos an install's PR-diff backfill listed (`codehost_repos`): the walker's
 * cursor keeps repo ids only, to stay under 100 KB at the caps (spec §8), and reads names
 * here; indexer sessions read the clone URL and default branch. Also the installs whose
 * walk is unfinished, for resuming walkers when a shard moves.
 */
import { isUuid, toIso, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

export interface ListedRepoRow {
  repo_id: number;
  full_name: string;
  clone_url: string;
  default_branch: string;
}

/** Upsert one listing page's repos (idempotent: a replayed step writes the same rows). */
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
           default_branch = EXCLUDED.default_branch, listed_at = now()`,
    [
      install.install_id,
      install.tenant_id,
      repos.map((r) => r.repo_id),
      repos.map((r) => sanitizeText(r.full_name)),
      repos.map((r) => sanitizeText(r.clone_url)),
      repos.map((r) => sanitizeText(r.default_branch)),
    ],
  );
}

export async function getListedRepo(q: Queryable, installId: string, repoId: number): Promise<ListedRepoRow | null> {
  if (!isUuid(installId) || !Number.isSafeInteger(repoId)) return null;
  const { rows } = await q.query<{ repo_id: string; full_name: string; clone_url: string; default_branch: string }>(
    'SELECT repo_id, full_name, clone_url, default_branch FROM codehost_repos WHERE install_id = $1 AND repo_id = $2',
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
