/**
 * The code-host backfill cursor (spec §2.3, §3.2): where one install's PR-diff walk
 * stands. It lives in the cursor KV bucket and is committed after every step, so a crash
 * or a shard move resumes from the last committed step (ARCHITECTURE "backfill walker").
 *
 * It must stay under 100 KB at the caps with the longest legal names (spec §8), so it
 * holds only ids and numbers: the pending-repo queue is repo ids (their names live in
 * the repo registry, `store/repo-index-state.ts`), the pending-PR queue is PR numbers of
 * the one repo being walked, and the only name it carries is that repo's. The codec
 * (`cursor-codec.ts`) stores the PR queue as ascending deltas.
 */

export type BackfillPhase = 'ReposListing' | 'PrEnumerating' | 'PrDiffFetching' | 'Done';

export interface BackfillCaps {
  /** spec §2.3: `PENDING_REPOS_CAP`. */
  pendingRepos: number;
  /** spec §2.3: `PENDING_PRS_CAP`. */
  pendingPrs: number;
}

export const SPEC_CAPS: BackfillCaps = Object.freeze({ pendingRepos: 1000, pendingPrs: 10000 });

/** The repo whose pulls are being listed and whose PR diffs are being fetched. */
interface CurrentRepo {
  id: number;
  full_name: string;
  /** Next page of its pulls listing. */
  pulls_page: number;
  /** Last PR number taken from `pulls_page` when the PR queue filled mid-page; null: from its start. */
  pulls_after: number | null;
  /** Its pulls listing reached the last page. */
  pulls_listed: boolean;
}

interface BackfillCounts {
  steps: number;
  repos_listed: number;
  repos_done: number;
  repos_skipped: number;
  prs_listed: number;
  prs_done: number;
  prs_oversized: number;
  prs_skipped: number;
}

export interface BackfillCursor {
  v: 1;
  phase: BackfillPhase;
  /** spec §2.3: the listing page to read when the walk (re)enters ReposListing. */
  repos_resume_page: number;
  /** Last repo id taken from `repos_resume_page` when the repo queue filled mid-page; null: from its start. */
  repos_resume_after: number | null;
  /** The repos listing reached its last page. */
  repos_listed: boolean;
  /** Pending-repo queue (repo ids, listing order), at most `pendingRepos`. */
  pending_repos: number[];
  repo: CurrentRepo | null;
  /** Pending-PR queue of `repo`: ascending PR numbers, at most `pendingPrs`. */
  pending_prs: number[];
  counts: BackfillCounts;
}

export function initialCursor(): BackfillCursor {
  return {
    v: 1,
    phase: 'ReposListing',
    repos_resume_page: 1,
    repos_resume_after: null,
    repos_listed: false,
    pending_repos: [],
    repo: null,
    pending_prs: [],
    counts: {
      steps: 0,
      repos_listed: 0,
      repos_done: 0,
      repos_skipped: 0,
      prs_listed: 0,
      prs_done: 0,
      prs_oversized: 0,
      prs_skipped: 0,
    },
  };
}

/** The install record's `backfill` progress fields (INTERFACE §3: extra fields allowed). */
export function progressOf(c: BackfillCursor): Record<string, unknown> {
  return {
    phase: c.phase,
    ...c.counts,
    pending_repos: c.pending_repos.length,
    pending_prs: c.pending_prs.length,
    current_repo: c.repo?.full_name ?? null,
  };
}

/**
 * Repos added to the installation after the walk began (`installation_repositories.added`),
 * queued behind the pending ones within the repo cap (spec §2.3). A repo already queued or
 * being walked is not queued twice; repos past the cap are returned as `dropped`. A walk
 * that was `Done` goes on to enumerate them.
 */
export function queueAddedRepos(
  c: BackfillCursor,
  repoIds: number[],
  caps: BackfillCaps,
): { cursor: BackfillCursor; queued: number[]; dropped: number[] } {
  const next = structuredClone(c);
  const seen = new Set(next.repo ? [next.repo.id, ...next.pending_repos] : next.pending_repos);
  const queued: number[] = [];
  const dropped: number[] = [];
  for (const id of repoIds) {
    if (seen.has(id)) continue;
    seen.add(id);
    if (next.pending_repos.length >= caps.pendingRepos) dropped.push(id);
    else {
      next.pending_repos.push(id);
      queued.push(id);
    }
  }
  next.counts.repos_listed += queued.length;
  if (next.phase === 'Done' && next.pending_repos.length > 0) next.phase = 'PrEnumerating';
  return { cursor: next, queued, dropped };
}

/** A finished walk, to reopen for repos added since: nothing left to list, counts carried on from its progress. */
export function finishedCursor(progress: Record<string, unknown>): BackfillCursor {
  const c = initialCursor();
  c.phase = 'Done';
  c.repos_listed = true;
  for (const k of Object.keys(c.counts) as Array<keyof BackfillCounts>) {
    const v = progress[k];
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) c.counts[k] = v;
  }
  return c;
}
