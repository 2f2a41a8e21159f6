/**
 * One step of the PR-diff backfill walk (spec §3.2): exactly one upstream call (spec §8),
 * then the cursor it leads to. Pure apart from that call and the repo-name lookup, so the
 * walker actor can publish the step's event and commit the cursor only afterwards: a crash
 * anywhere replays the step from the last committed cursor, and the event's id absorbs
 * the replay (no duplicates, no gaps).
 *
 * Walk order: ReposListing fills the pending-repo queue page by page until the listing
 * ends or the queue is full; PrEnumerating lists one repo's pulls into the pending-PR
 * queue until they end or the queue is full; PrDiffFetching drains that queue one diff per
 * step, then returns to PrEnumerating (more pulls of the repo) or takes the next repo. A
 * queue that reached its cap stops its producer at a marker (`repos_resume_page` +
 * `repos_resume_after`, or the repo's `pulls_page` + `pulls_after`); once the repo queue
 * has drained the walk goes back to ReposListing and resumes there (spec §3.2 table).
 * Markers name the last item taken, so a page that shifted upstream in between is re-read
 * from after that item; a duplicate this could cause is absorbed by the event id.
 */
import { Internal } from '../../../errors.js';
import type { BackfillCaps, BackfillCursor, BackfillPhase } from './backfill-cursor.js';
import { isOversized, type BackfillDiff } from './backfill-event.js';
import type { CodehostApi, ListedPull, ListedRepo, RateObservation } from './codehost-api.js';
import { MAX_PR_NUMBER } from './cursor-codec.js';

export interface StepPorts {
  api: CodehostApi;
  /** Full name of a listed repo, from the registry the walker fills before committing a listing page. */
  repoName(repoId: number): Promise<string | null>;
  signal: AbortSignal;
}

export interface StepResult {
  cursor: BackfillCursor;
  /** The event this step produced: publish it before committing `cursor`. */
  diff: BackfillDiff | null;
  /** Repos a listing page returned: register them before committing `cursor`. */
  listed: ListedRepo[];
  /** Pull requests a pulls page queued: publish their events before committing `cursor`. */
  pulls: { repo: { id: number; full_name: string }; items: ListedPull[] } | null;
  rate: RateObservation | null;
  call: 'repos' | 'pulls' | 'diff';
}

export async function stepBackfill(
  committed: BackfillCursor,
  ports: StepPorts,
  caps: BackfillCaps,
): Promise<StepResult> {
  const c = structuredClone(committed);
  c.counts.steps++;
  switch (c.phase) {
    case 'ReposListing':
      return listRepos(c, ports, caps);
    case 'PrEnumerating':
      return listPulls(c, ports, caps);
    case 'PrDiffFetching':
      return fetchDiff(c, ports);
    case 'Done':
      throw new Internal('backfill walk is done; there is no step to take');
  }
}

async function listRepos(c: BackfillCursor, ports: StepPorts, caps: BackfillCaps): Promise<StepResult> {
  const page = await ports.api.listInstallationRepos(c.repos_resume_page, ports.signal);
  const fresh = after(page.items, c.repos_resume_after, (r) => r.id);
  const room = Math.max(0, caps.pendingRepos - c.pending_repos.length);
  const taken = fresh.slice(0, room);
  c.pending_repos.push(...taken.map((r) => r.id));
  c.counts.repos_listed += taken.length;
  if (taken.length < fresh.length) {
    // Queue full mid-page: resume this page after the last repo taken.
    c.repos_resume_after = taken.length > 0 ? taken[taken.length - 1]!.id : c.repos_resume_after;
  } else if (page.hasNext) {
    c.repos_resume_page++;
    c.repos_resume_after = null;
  } else {
    c.repos_listed = true;
  }
  const full = c.pending_repos.length >= caps.pendingRepos;
  c.phase = full || c.repos_listed ? afterRepo(c) : 'ReposListing';
  return { cursor: c, diff: null, listed: taken, pulls: null, rate: page.rate, call: 'repos' };
}

async function listPulls(c: BackfillCursor, ports: StepPorts, caps: BackfillCaps): Promise<StepResult> {
  if (!c.repo) {
    // Take the next repo; one whose name the registry lost cannot be walked (logged by the actor via counts).
    while (!c.repo) {
      const id = c.pending_repos.shift();
      if (id === undefined) throw new Internal('backfill cursor is in PrEnumerating with no repo to enumerate');
      const name = await ports.repoName(id);
      if (name === null) {
        c.counts.repos_skipped++;
        continue;
      }
      c.repo = { id, full_name: name, pulls_page: 1, pulls_after: null, pulls_listed: false };
    }
  }
  const repo = c.repo;
  const page = await ports.api.listPulls(repo.full_name, repo.pulls_page, ports.signal);
  if (page.status === 'gone') {
    // Deleted, or removed from the installation since it was listed: nothing left to walk.
    c.counts.repos_skipped++;
    c.repo = null;
    c.pending_prs = [];
    c.phase = afterRepo(c);
    return { cursor: c, diff: null, listed: [], pulls: null, rate: page.rate, call: 'pulls' };
  }
  const queued = new Set(c.pending_prs);
  const fresh = after(page.items, repo.pulls_after, (p) => p.number).filter(
    (p) => Number.isInteger(p.number) && p.number >= 1 && p.number <= MAX_PR_NUMBER,
  );
  const room = Math.max(0, caps.pendingPrs - c.pending_prs.length);
  const taken = fresh.slice(0, room);
  for (const p of taken) queued.add(p.number);
  c.pending_prs = [...queued].sort((a, b) => a - b);
  c.counts.prs_listed += taken.length;
  if (taken.length < fresh.length) {
    repo.pulls_after = taken.length > 0 ? taken[taken.length - 1]!.number : repo.pulls_after;
  } else if (page.hasNext) {
    repo.pulls_page++;
    repo.pulls_after = null;
  } else {
    repo.pulls_listed = true;
  }
  const full = c.pending_prs.length >= caps.pendingPrs;
  if (c.pending_prs.length > 0 && (full || repo.pulls_listed)) c.phase = 'PrDiffFetching';
  else if (repo.pulls_listed) finishRepo(c);
  else c.phase = 'PrEnumerating';
  return {
    cursor: c,
    diff: null,
    listed: [],
    pulls: taken.length > 0 ? { repo: { id: repo.id, full_name: repo.full_name }, items: taken } : null,
    rate: page.rate,
    call: 'pulls',
  };
}

async function fetchDiff(c: BackfillCursor, ports: StepPorts): Promise<StepResult> {
  const repo = c.repo;
  const n = c.pending_prs[0];
  if (!repo || n === undefined) throw new Internal('backfill cursor is in PrDiffFetching with an empty PR queue');
  const res = await ports.api.getPullDiff(repo.full_name, n, ports.signal);
  c.pending_prs.shift();
  let diff: BackfillDiff | null = null;
  if (res.status === 'gone') {
    c.counts.prs_skipped++;
  } else {
    // spec §6.1 rule 3: a 406 is an oversized diff, not a failed page.
    diff = { repoId: repo.id, repoFullName: repo.full_name, prNumber: n, diff: res.status === 'ok' ? res.diff : null };
    c.counts.prs_done++;
    if (diff.diff === null || isOversized(diff.diff)) c.counts.prs_oversized++;
  }
  if (c.pending_prs.length > 0) c.phase = 'PrDiffFetching';
  else if (repo.pulls_listed) finishRepo(c);
  else c.phase = 'PrEnumerating';
  return { cursor: c, diff, listed: [], pulls: null, rate: res.rate, call: 'diff' };
}

function finishRepo(c: BackfillCursor): void {
  c.repo = null;
  c.counts.repos_done++;
  c.phase = afterRepo(c);
}

/** Where the walk goes once no repo is being walked: the next queued repo, the listing from its marker, or the end. */
function afterRepo(c: BackfillCursor): BackfillPhase {
  if (c.repo || c.pending_repos.length > 0) return 'PrEnumerating';
  return c.repos_listed ? 'Done' : 'ReposListing';
}

/** Items after the marker (the last one taken from this page); all of them when it is absent from the page. */
function after<T>(items: T[], marker: number | null, idOf: (t: T) => number): T[] {
  if (marker === null) return items;
  const i = items.findIndex((t) => idOf(t) === marker);
  return i < 0 ? items : items.slice(i + 1);
}
