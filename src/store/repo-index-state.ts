/**
 * Repo index state (spec §2.3, INTERFACE §6): one row per `(install, repo)` that has an
 * indexer daemon, mirroring the daemon's lifecycle (`pending` before the first sync, then
 * `indexing`, `ready` or `failed`). Rows of active installs count toward the tenant's
 * repo cap (spec §8); admission takes a per-tenant transaction lock so two repos admitted
 * at once cannot both take the last place.
 */
import { isUuid, toIso, withTx, type Queryable } from './db.js';
import type { Pool } from 'pg';
import { sanitizeJson, sanitizeText } from './sanitize.js';

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
  created_at: string;
  updated_at: string;
}

interface Row extends Omit<RepoIndexState, 'repo_id' | 'lock_expires_at' | 'sync_requested_at' | 'indexed_at' | 'created_at' | 'updated_at'> {
  repo_id: string;
  lock_expires_at: Date | null;
  sync_requested_at: Date | null;
  indexed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `install_id, repo_id, tenant_id, repo_full_name, clone_url, daemon_url, status, last_indexed_sha, target_sha,
  progress, error, lock_owner, lock_expires_at, sync_requested_at, indexed_at, created_at, updated_at`;

function toState(r: Row): RepoIndexState {
  return {
    ...r,
    repo_id: Number(r.repo_id),
    lock_expires_at: toIso(r.lock_expires_at),
    sync_requested_at: toIso(r.sync_requested_at),
    indexed_at: toIso(r.indexed_at),
    created_at: toIso(r.created_at),
    updated_at: toIso(r.updated_at),
  };
}

export async function getIndexState(q: Queryable, installId: string, repoId: number): Promise<RepoIndexState | null> {
  if (!isUuid(installId) || !Number.isSafeInteger(repoId)) return null;
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM repo_index_state WHERE install_id = $1 AND repo_id = $2`, [installId, repoId]);
  return rows[0] ? toState(rows[0]) : null;
}

export type Admission = { admitted: true; state: RepoIndexState } | { admitted: false; used: number; cap: number };

/** The repo's row, created when the tenant is under its cap (spec §8: repo count per tenant is capped). */
export async function admitRepo(
  pool: Pool,
  input: { installId: string; tenantId: string; repoId: number; repoFullName: string; cloneUrl: string; cap: number },
): Promise<Admission> {
  return withTx(pool, async (tx) => {
    const existing = await getIndexState(tx, input.installId, input.repoId);
    if (existing) return { admitted: true, state: existing };
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('repo_cap:' || $1::text, 0))", [input.tenantId]);
    const { rows } = await tx.query<{ n: string }>(
      `SELECT count(*) AS n FROM repo_index_state s JOIN installs i USING (install_id)
       WHERE s.tenant_id = $1 AND i.status = 'active'`,
      [input.tenantId],
    );
    const used = Number(rows[0]?.n ?? 0);
    if (used >= input.cap) return { admitted: false, used, cap: input.cap };
    const ins = await tx.query<Row>(
      `INSERT INTO repo_index_state (install_id, repo_id, tenant_id, repo_full_name, clone_url)
       SELECT install_id, $2, tenant_id, $4, $5 FROM installs WHERE install_id = $1 AND tenant_id = $3
       ON CONFLICT (install_id, repo_id) DO UPDATE SET repo_full_name = EXCLUDED.repo_full_name, clone_url = EXCLUDED.clone_url
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
}

const TIMESTAMPS = new Set(['lock_expires_at', 'sync_requested_at', 'indexed_at']);
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
  ...TIMESTAMPS,
]);

/** Returns the updated row, or null when there is none. */
export async function updateIndexState(q: Queryable, installId: string, repoId: number, patch: IndexStatePatch): Promise<RepoIndexState | null> {
  if (!isUuid(installId) || !Number.isSafeInteger(repoId)) return null;
  const sets: string[] = [];
  const params: unknown[] = [installId, repoId];
  for (const [column, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (!PATCHABLE.has(column)) throw new Error(`repo_index_state has no patchable column ${column}`);
    params.push(column === 'progress' ? JSON.stringify(sanitizeJson(value) ?? null) : typeof value === 'string' ? sanitizeText(value) : value);
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

/** Sessions to resume after a shard moves: rows of active installs still pending or indexing. */
export async function listUnsettledSessions(q: Queryable): Promise<Array<{ install_id: string; repo_id: number; lock_owner: string | null; updated_at: string }>> {
  const { rows } = await q.query<{ install_id: string; repo_id: string; lock_owner: string | null; updated_at: Date }>(
    `SELECT s.install_id, s.repo_id, s.lock_owner, s.updated_at FROM repo_index_state s JOIN installs i USING (install_id)
     WHERE s.status IN ('pending', 'indexing') AND i.status = 'active'
     ORDER BY s.created_at`,
  );
  return rows.map((r) => ({ install_id: r.install_id, repo_id: Number(r.repo_id), lock_owner: r.lock_owner, updated_at: toIso(r.updated_at) }));
}
