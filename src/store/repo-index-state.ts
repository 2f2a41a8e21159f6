/**
 * Repo index state (spec §2.3, INTERFACE §6): one row per `(install, repo)` that has an
 * indexer daemon, mirroring the daemon's lifecycle (`pending` before the first sync, then
 * `indexing`, `ready` or `failed`). Rows of active installs count toward the tenant's
 * repo cap (spec §8); admission takes a per-tenant transaction lock so two repos admitted
 * at once cannot both take the last place, and a repo removed from the installation
 * (`installation_repositories.removed`) loses its row and is refused until it is added again.
 * A failed index carries its retry schedule (`retries`, `retry_at`, `retry_owner`).
 */
import { isUuid, toIso, withTx, type Queryable } from './db.js';
import type { Pool } from 'pg';
import { markReposRemoved, type WebhookRepo } from './backfill-repos.js';
import { jsonText, sanitizeText } from './sanitize.js';

export type IndexStatus = 'pending' | 'indexing' | 'ready' | 'failed';

export interface RepoIndexState {
  install_id: string;
  repo_id: number;
  tenant_id: string;
  repo_full_name: string;
  clone_url: string;
  daemon_url: string | null;
  status: IndexStatus;
  last_indexed_sha: string | null;
  target_sha: string | null;
  progress: unknown;
  error: string | null;
  lock_owner: string | null;
  lock_expires_at: string | null;
  sync_requested_at: string | null;
  indexed_at: string | null;
  /** Consecutive failed syncs since the last `ready`. */
  retries: number;
  /** When the next automatic retry of a failed index is due; null: none scheduled. */
  retry_at: string | null;
  /** `{namespace}/{node}` that scheduled that retry. */
  retry_owner: string | null;
  created_at: string;
  updated_at: string;
}

interface Row extends Omit<
  RepoIndexState,
  'repo_id' | 'lock_expires_at' | 'sync_requested_at' | 'indexed_at' | 'retry_at' | 'created_at' | 'updated_at'
> {
  repo_id: string;
  retry_at: Date | null;
  lock_expires_at: Date | null;
  sync_requested_at: Date | null;
  indexed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `install_id, repo_id, tenant_id, repo_full_name, clone_url, daemon_url, status, last_indexed_sha,
  target_sha, progress, error, lock_owner, lock_expires_at, sync_requested_at, indexed_at, retries, retry_at,
  retry_owner, created_at, updated_at`;

function toState(r: Row): RepoIndexState {
  return {
    ...r,
    repo_id: Number(r.repo_id),
    lock_expires_at: toIso(r.lock_expires_at),
    sync_requested_at: toIso(r.sync_requested_at),
    indexed_at: toIso(r.indexed_at),
    retry_at: toIso(r.retry_at),
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at),
  };
}

export async function getIndexState(q: Queryable, installId: string, repoId: number): Promise<RepoIndexState | null> {
  if (!isUuid(installId) || !Number.isSafeInteger(repoId)) return null;
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM repo_index_state WHERE install_id = $1 AND repo_id = $2`,
    [installId, repoId],
  );
  return rows[0] ? toState(rows[0]) : null;
}

export type Admission =
  | { admitted: true; state: RepoIndexState }
  | { admitted: false; reason: 'capped'; used: number; cap: number }
  | { admitted: false; reason: 'removed' };

const tenantLock = (q: Queryable, tenantId: string) =>
  q.query("SELECT pg_advisory_xact_lock(hashtextextended('repo_cap:' || $1::text, 0))", [tenantId]);

/**
 * The repo's row, created when the tenant is under its cap (spec §8: repo count per tenant
 * is capped) and the repo was not removed from the installation.
 */
export async function admitRepo(
  pool: Pool,
  input: { installId: string; tenantId: string; repoId: number; repoFullName: string; cloneUrl: string; cap: number },
): Promise<Admission> {
  return withTx(pool, async (tx) => {
    const existing = await getIndexState(tx, input.installId, input.repoId);
    if (existing) return { admitted: true, state: existing };
    await tenantLock(tx, input.tenantId);
    const removed = await tx.query(
      'SELECT 1 FROM codehost_repos WHERE install_id = $1 AND repo_id = $2 AND removed_at IS NOT NULL',
      [input.installId, input.repoId],
    );
    if (removed.rows.length > 0) return { admitted: false, reason: 'removed' };
    const { rows } = await tx.query<{ n: string }>(
      `SELECT count(*) AS n FROM repo_index_state s JOIN installs i USING (install_id)
       WHERE s.tenant_id = $1 AND i.status = 'active'`,
      [input.tenantId],
    );
    const used = Number(rows[0]?.n ?? 0);
    if (used >= input.cap) return { admitted: false, reason: 'capped', used, cap: input.cap };
    const ins = await tx.query<Row>(
      `INSERT INTO repo_index_state (install_id, repo_id, tenant_id, repo_full_name, clone_url)
       SELECT install_id, $2, tenant_id, $4, $5 FROM installs WHERE install_id = $1 AND tenant_id = $3
       ON CONFLICT (install_id, repo_id) DO UPDATE
         SET repo_full_name = EXCLUDED.repo_full_name, clone_url = EXCLUDED.clone_url
       RETURNING ${COLUMNS}`,
      [input.installId, input.repoId, input.tenantId, sanitizeText(input.repoFullName), sanitizeText(input.cloneUrl)],
    );
    if (!ins.rows[0]) throw new Error(`install ${input.installId} of tenant ${input.tenantId} does not exist`);
    return { admitted: true, state: toState(ins.rows[0]) };
  });
}

export interface IndexStatePatch {
  repo_full_name?: string;
  clone_url?: string;
  daemon_url?: string | null;
  status?: IndexStatus;
  last_indexed_sha?: string | null;
  target_sha?: string | null;
  progress?: unknown;
  error?: string | null;
  lock_owner?: string | null;
  /** Epoch ms, or null to release the lock. */
  lock_expires_at?: number | null;
  sync_requested_at?: number | null;
  indexed_at?: number | null;
  retries?: number;
  /** Epoch ms, or null: no retry scheduled. */
  retry_at?: number | null;
  retry_owner?: string | null;
}

const TIMESTAMPS = new Set(['lock_expires_at', 'sync_requested_at', 'indexed_at', 'retry_at']);
const PATCHABLE = new Set([
  'repo_full_name',
  'clone_url',
  'daemon_url',
  'status',
  'last_indexed_sha',
  'target_sha',
  'progress',
  'error',
  'lock_owner',
  'retries',
  'retry_owner',
  ...TIMESTAMPS,
]);

/** Returns the updated row, or null when there is none. */
export async function updateIndexState(
  q: Queryable,
  installId: string,
  repoId: number,
  patch: IndexStatePatch,
): Promise<RepoIndexState | null> {
  if (!isUuid(installId) || !Number.isSafeInteger(repoId)) return null;
  const sets: string[] = [];
  const params: unknown[] = [installId, repoId];
  for (const [column, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (!PATCHABLE.has(column)) throw new Error(`repo_index_state has no patchable column ${column}`);
    params.push(column === 'progress' ? jsonText(value) : typeof value === 'string' ? sanitizeText(value) : value);
    const p = `$${params.length}`;
    if (TIMESTAMPS.has(column)) sets.push(`${column} = to_timestamp(${p}::double precision / 1000)`);
    else sets.push(column === 'progress' ? `progress = ${p}::jsonb` : `${column} = ${p}`);
  }
  const { rows } = await q.query<Row>(
    `UPDATE repo_index_state SET ${[...sets, 'updated_at = now()'].join(', ')}
     WHERE install_id = $1 AND repo_id = $2 RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0] ? toState(rows[0]) : null;
}

/**
 * Sessions to resume after a shard moves: rows of active installs still pending or
 * indexing, or failed with a retry scheduled.
 */
export async function listUnsettledSessions(q: Queryable): Promise<
  Array<{
    install_id: string;
    repo_id: number;
    lock_owner: string | null;
    retry_owner: string | null;
    updated_at: string;
  }>
> {
  const { rows } = await q.query<{
    install_id: string;
    repo_id: string;
    lock_owner: string | null;
    retry_owner: string | null;
    updated_at: Date;
  }>(
    `SELECT s.install_id, s.repo_id, s.lock_owner, s.retry_owner, s.updated_at
     FROM repo_index_state s JOIN installs i USING (install_id)
     WHERE (s.status IN ('pending', 'indexing') OR (s.status = 'failed' AND s.retry_at IS NOT NULL))
       AND i.status = 'active'
     ORDER BY s.created_at`,
  );
  return rows.map((r) => ({
    install_id: r.install_id,
    repo_id: Number(r.repo_id),
    lock_owner: r.lock_owner,
    retry_owner: r.retry_owner,
    updated_at: toIso(r.updated_at),
  }));
}

/**
 * Repos removed from the installation (`installation_repositories.removed`): marked removed
 * in the repo registry and their index rows deleted, in one transaction under the tenant's
 * admission lock, so no admission in flight can bring a row back. Returns the ids whose
 * index rows were deleted. Their sessions find no row on their next tick and stop.
 */
export async function removeRepos(
  pool: Pool,
  install: { install_id: string; tenant_id: string },
  repos: WebhookRepo[],
): Promise<number[]> {
  if (repos.length === 0) return [];
  return withTx(pool, async (tx) => {
    await tenantLock(tx, install.tenant_id);
    await markReposRemoved(tx, install, repos);
    const { rows } = await tx.query<{ repo_id: string }>(
      'DELETE FROM repo_index_state WHERE install_id = $1 AND repo_id = ANY($2::bigint[]) RETURNING repo_id',
      [install.install_id, repos.map((r) => r.repo_id)],
    );
    return rows.map((r) => Number(r.repo_id));
  });
}
