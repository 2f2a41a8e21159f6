/**
 * Chat catch-up records (INTERFACE §10.6, migration 050). A gap is recorded on the install
 * row by whoever saw it (the events route for `app_rate_limited` or a refusal, the edge
 * heartbeat for an outage); gaps recorded before their re-read starts merge into one
 * (earliest start, latest end). The install's walker takes the merged gap once it has
 * ended and re-reads `[since, until]`; a gap recorded while it walks waits for the next
 * walk. Times are epoch milliseconds here, timestamptz in the row.
 */
import { toIso, type Queryable } from './db.js';
import { jsonText, sanitizeText } from './sanitize.js';

type CatchUpState = 'none' | 'pending' | 'running' | 'complete' | 'failed';

/** What the install record shows (INTERFACE §10.6 `catch_up`). */
export interface InstallCatchUp {
  state: CatchUpState;
  /** The start of the gap being (or to be) re-read; null before the first gap. */
  since: string | null;
  /** Messages the re-read found missing and ingested. */
  recovered: number;
  updated_at: string | null;
  [progress: string]: unknown;
}

export interface CatchUpColumns {
  catch_up_state: CatchUpState;
  catch_up_pending_since: Date | null;
  catch_up_since: Date | null;
  catch_up_progress: Record<string, unknown>;
  catch_up_updated_at: Date | null;
}

export const CATCH_UP_COLUMNS = `catch_up_state, catch_up_pending_since, catch_up_since, catch_up_progress,
  catch_up_updated_at`;

export function catchUpOf(r: CatchUpColumns): InstallCatchUp {
  const since = r.catch_up_state === 'pending' ? r.catch_up_pending_since : r.catch_up_since;
  return {
    ...r.catch_up_progress,
    state: r.catch_up_state,
    since: toIso(since),
    recovered: Number(r.catch_up_progress.recovered ?? 0),
    updated_at: toIso(r.catch_up_updated_at),
  };
}

const MERGE = `catch_up_pending_since = LEAST(COALESCE(catch_up_pending_since, $2), $2),
  catch_up_due_at = GREATEST(COALESCE(catch_up_due_at, $3), $3),
  catch_up_state = CASE WHEN catch_up_state = 'running' THEN 'running' ELSE 'pending' END,
  catch_up_updated_at = now()`;

/**
 * A gap of the team's active install, `[sinceMs, untilMs]`; its install id, or null when the
 * team has none (its events are dropped anyway).
 */
export async function recordTeamGap(
  q: Queryable,
  teamId: string,
  sinceMs: number,
  untilMs: number,
): Promise<string | null> {
  const { rows } = await q.query<{ install_id: string }>(
    `UPDATE installs SET ${MERGE}
     WHERE install_id = (SELECT install_id FROM chat_workspace_claims WHERE team_id = $1)
       AND connector_id = 'chatapp' AND status = 'active'
     RETURNING install_id`,
    [sanitizeText(teamId), new Date(sinceMs), new Date(untilMs)],
  );
  return rows[0]?.install_id ?? null;
}

/** A gap of every active chat install (the service was away); their ids. */
export async function recordGapForAll(q: Queryable, sinceMs: number, untilMs: number): Promise<string[]> {
  const { rows } = await q.query<{ install_id: string }>(
    `UPDATE installs SET ${MERGE.replaceAll('$2', '$1').replaceAll('$3', '$2')}
     WHERE connector_id = 'chatapp' AND status = 'active'
     RETURNING install_id`,
    [new Date(sinceMs), new Date(untilMs)],
  );
  return rows.map((r) => r.install_id);
}

export type CatchUpTake = { window: { sinceMs: number; untilMs: number } } | { dueAtMs: number } | null;

/**
 * The walk to make now: the one under way (a new activation rebuilds it), or the recorded
 * gap once it has ended, taken here; else when it ends, or null when there is none.
 */
export async function takeCatchUp(q: Queryable, installId: string, nowMs: number): Promise<CatchUpTake> {
  const { rows } = await q.query<{
    catch_up_state: CatchUpState;
    since: Date | null;
    until: Date | null;
    due: Date | null;
    taken: boolean;
  }>(
    `WITH taken AS (
       UPDATE installs SET catch_up_since = catch_up_pending_since, catch_up_until = $2,
         catch_up_pending_since = NULL, catch_up_due_at = NULL, catch_up_state = 'running',
         catch_up_progress = '{}', catch_up_updated_at = now()
       WHERE install_id = $1 AND catch_up_state <> 'running' AND catch_up_pending_since IS NOT NULL
         AND catch_up_due_at <= $2
       RETURNING catch_up_state, catch_up_since AS since, catch_up_until AS until, NULL::timestamptz AS due)
     SELECT *, true AS taken FROM taken
     UNION ALL
     SELECT catch_up_state, catch_up_since, catch_up_until, catch_up_due_at, false FROM installs
     WHERE install_id = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,
    [installId, new Date(nowMs)],
  );
  const r = rows[0];
  if (!r) return null;
  if (r.catch_up_state === 'running' && r.since && r.until)
    return { window: { sinceMs: r.since.getTime(), untilMs: r.until.getTime() } };
  if (r.catch_up_state === 'pending' && r.due) return { dueAtMs: r.due.getTime() };
  return null;
}

/** Progress of the walk under way. */
export async function setCatchUpProgress(q: Queryable, installId: string, progress: object): Promise<void> {
  await q.query(
    `UPDATE installs SET catch_up_progress = $2::jsonb, catch_up_updated_at = now()
     WHERE install_id = $1 AND catch_up_state = 'running'`,
    [installId, jsonText(progress)],
  );
}

/** The walk ended; answers whether another gap waits (the state is then `pending`). */
export async function endCatchUp(
  q: Queryable,
  installId: string,
  state: 'complete' | 'failed',
  progress: object,
): Promise<boolean> {
  const { rows } = await q.query<{ catch_up_state: CatchUpState }>(
    `UPDATE installs SET catch_up_progress = $3::jsonb, catch_up_updated_at = now(),
       catch_up_state = CASE WHEN catch_up_pending_since IS NOT NULL THEN 'pending' ELSE $2 END
     WHERE install_id = $1 AND catch_up_state = 'running'
     RETURNING catch_up_state`,
    [installId, state, jsonText(progress)],
  );
  return rows[0]?.catch_up_state === 'pending';
}

/** Active chat installs with a catch-up to run: the walkers to resume. */
export async function listOpenCatchUps(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ install_id: string }>(
    `SELECT install_id FROM installs
     WHERE connector_id = 'chatapp' AND status = 'active' AND catch_up_state IN ('pending', 'running')`,
  );
  return rows.map((r) => r.install_id);
}
