/**
 * unit: the PR-diff walk (spec §3.2) over an in-memory code host: several repos and pages,
 * 406s and diffs over 1 MB, vanished repos and PRs, the queue caps (small, injected) with
 * the return to ReposListing, exactly one upstream call per step, and replays of steps
 * whose commit was lost.
 */
import { describe, expect, it } from 'vitest';
import {
  initialCursor,
  SPEC_CAPS,
  type BackfillCaps,
  type BackfillCursor,
  type BackfillPhase,
} from '../../src/connectors/codehost/backfill/backfill-cursor.js';
import {
  backfillDiffEvent,
  backfillEventId,
  backfillPullEvent,
  backfillPullEventId,
  DIFF_MAX_BYTES,
  type BackfillDiff,
} from '../../src/connectors/codehost/backfill/backfill-event.js';
import { stepBackfill } from '../../src/connectors/codehost/backfill/backfill-step.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import type {
  CodehostApi,
  DiffResult,
  ListedPull,
  ListedRepo,
  Page,
  PullsPage,
} from '../../src/connectors/codehost/backfill/codehost-api.js';
import { decodeCursor, encodeCursor } from '../../src/connectors/codehost/backfill/cursor-codec.js';

interface FakeRepo extends ListedRepo {
  prs: number[];
  gone?: boolean;
}

/** A code host whose pages hold `perPage` items; counts every call. */
class MemoryHost implements CodehostApi {
  calls: string[] = [];
  constructor(
    readonly repos: FakeRepo[],
    readonly perPage: number,
    readonly diffs: (repo: string, n: number) => DiffResult,
  ) {}
  async listInstallationRepos(page: number): Promise<Page<ListedRepo>> {
    this.calls.push(`repos:${page}`);
    const items = this.repos
      .slice((page - 1) * this.perPage, page * this.perPage)
      .map(({ prs: _p, gone: _g, ...r }) => r);
    return { items, hasNext: page * this.perPage < this.repos.length, rate: null };
  }
  async listPulls(fullName: string, page: number): Promise<PullsPage> {
    this.calls.push(`pulls:${fullName}:${page}`);
    const repo = this.repos.find((r) => r.full_name === fullName)!;
    if (repo.gone) return { status: 'gone', rate: null };
    const items = repo.prs.slice((page - 1) * this.perPage, page * this.perPage).map((n) => listedPull(n));
    return { status: 'ok', items, hasNext: page * this.perPage < repo.prs.length, rate: null };
  }
  async getPullDiff(fullName: string, n: number): Promise<DiffResult> {
    this.calls.push(`diff:${fullName}:${n}`);
    return this.diffs(fullName, n);
  }
}

function listedPull(number: number): ListedPull {
  return {
    number,
    title: `PR ${number}`,
    state: 'open',
    body: null,
    head_sha: 'a'.repeat(40),
    merged: false,
    updated_at: '2026-01-01T00:00:00Z',
    user: { login: 'octocat' },
  };
}

function makeRepos(spec: Array<{ prs: number; gone?: boolean }>): FakeRepo[] {
  return spec.map((s, i) => ({
    id: 1000 + i,
    full_name: `acme/repo-${i}`,
    clone_url: `https://example.test/acme/repo-${i}.git`,
    default_branch: 'main',
    // Listing order is newest first, as GitHub's default.
    prs: Array.from({ length: s.prs }, (_, k) => s.prs - k),
    ...(s.gone ? { gone: true } : {}),
  }));
}

const signal = new AbortController().signal;
const BIG = 'x'.repeat(DIFF_MAX_BYTES - 1) + 'é'; // 1 000 001 bytes of UTF-8 in 1 000 000 code units

function defaultDiffs(repo: string, n: number): DiffResult {
  if (n % 5 === 0) return { status: 'oversized', rate: null }; // GitHub's 406
  if (n % 7 === 0) return { status: 'ok', diff: BIG, rate: null };
  return { status: 'ok', diff: `diff --git a/${repo} b/${repo}\n+${n}\n`, rate: null };
}

interface Walk {
  diffs: BackfillDiff[];
  pulls: IngestEvent[];
  phases: BackfillPhase[];
  steps: number;
  cursor: BackfillCursor;
}

/**
 * Walks to Done, committing through the codec each step; `crashAt(step)` drops that step's commit (a crash after the
 * call).
 */
async function walk(
  host: MemoryHost,
  caps: BackfillCaps,
  crashAt: (step: number) => boolean = () => false,
): Promise<Walk> {
  const names = new Map<number, string>();
  let committed = encodeCursor(initialCursor());
  const out: Walk = { diffs: [], pulls: [], phases: ['ReposListing'], steps: 0, cursor: initialCursor() };
  for (let i = 0; i < 10_000; i++) {
    const cursor = decodeCursor(committed);
    if (cursor.phase === 'Done') {
      out.cursor = cursor;
      return out;
    }
    const before = host.calls.length;
    const r = await stepBackfill(cursor, { api: host, repoName: async (id) => names.get(id) ?? null, signal }, caps);
    out.steps++;
    expect(host.calls.length - before).toBe(1);
    for (const repo of r.listed) names.set(repo.id, repo.full_name);
    if (r.diff) out.diffs.push(r.diff);
    if (r.pulls) for (const p of r.pulls.items) out.pulls.push(backfillPullEvent(install, r.pulls.repo, p));
    if (crashAt(out.steps)) continue;
    committed = encodeCursor(r.cursor);
    if (out.phases[out.phases.length - 1] !== r.cursor.phase) out.phases.push(r.cursor.phase);
  }
  throw new Error('walk did not finish');
}

function expectEveryPrOnce(repos: FakeRepo[], diffs: BackfillDiff[], pulls?: IngestEvent[]): void {
  const live = repos.filter((r) => !r.gone);
  const expected = live.flatMap((r) => r.prs.map((n) => backfillEventId(r.id, n)));
  const got = diffs.map((d) => backfillEventId(d.repoId, d.prNumber));
  expect(new Set(got)).toEqual(new Set(expected));
  // INTERFACE §9.5: every PR's listing fields are published too, under their own id.
  if (pulls) {
    const listed = live.flatMap((r) => r.prs.map((n) => backfillPullEventId(r.id, n)));
    expect(new Set(pulls.map((e) => e.id))).toEqual(new Set(listed));
  }
}

const install = { install_id: 'i', tenant_id: 't' };

describe('unit: code-host backfill walk', () => {
  it('walks several repos and pages: 406s and >1 MB diffs flagged oversized, nothing else fails', async () => {
    const repos = makeRepos([{ prs: 7 }, { prs: 0 }, { prs: 3, gone: true }, { prs: 12 }, { prs: 1 }]);
    const host = new MemoryHost(repos, 3, defaultDiffs);
    const w = await walk(host, SPEC_CAPS);
    expect(w.diffs).toHaveLength(20);
    expectEveryPrOnce(repos, w.diffs, w.pulls);
    expect(w.pulls).toHaveLength(20);
    const pr11 = w.pulls.find((e) => e.id === backfillPullEventId(1003, 11))!;
    expect(pr11.kind).toBe('pull_request.backfill');
    expect(pr11.payload).toMatchObject({
      repo_id: 1003,
      repo_full_name: 'acme/repo-3',
      pr_number: 11,
      pull_request: {
        number: 11,
        title: 'PR 11',
        state: 'open',
        head: { sha: 'a'.repeat(40) },
        user: { login: 'octocat' },
      },
    });
    // Exactly one upstream call per step, and as many steps as calls.
    expect(host.calls).toHaveLength(w.steps);
    expect(w.cursor.counts).toMatchObject({
      repos_listed: 5,
      repos_done: 4,
      repos_skipped: 1,
      prs_done: 20,
      prs_listed: 20,
    });

    const events = w.diffs.map((d) => backfillDiffEvent({ install_id: 'i', tenant_id: 't' }, d));
    const byId = new Map(events.map((e) => [e.id, e.payload as Record<string, unknown>]));
    const oversized = [...byId.values()].filter((p) => p.oversized === true);
    // PRs 5, 10 (406) and 7 (over 1 MB) of repo 3 (12 PRs) and PRs 5, 7 of repo 0 (7 PRs).
    expect(oversized.map((p) => `${p.repo_id}:${p.pr_number}`).sort()).toEqual([
      '1000:5',
      '1000:7',
      '1003:10',
      '1003:5',
      '1003:7',
    ]);
    expect(w.cursor.counts.prs_oversized).toBe(5);
    for (const p of oversized) expect(p).not.toHaveProperty('diff');
    const normal = byId.get(backfillEventId(1003, 11))!;
    expect(normal).toEqual({
      repo_id: 1003,
      repo_full_name: 'acme/repo-3',
      pr_number: 11,
      oversized: false,
      diff: 'diff --git a/acme/repo-3 b/acme/repo-3\n+11\n',
    });
    expect(events[0]!.kind).toBe('pull_request.backfill_diff');
  });

  it('a diff of exactly 1 000 000 bytes is sent; one byte more is oversized', async () => {
    const exact = 'y'.repeat(DIFF_MAX_BYTES);
    const e1 = backfillDiffEvent(
      { install_id: 'i', tenant_id: 't' },
      { repoId: 1, repoFullName: 'a/b', prNumber: 1, diff: exact },
    );
    const e2 = backfillDiffEvent(
      { install_id: 'i', tenant_id: 't' },
      { repoId: 1, repoFullName: 'a/b', prNumber: 2, diff: BIG },
    );
    expect(e1.payload).toMatchObject({ oversized: false, diff: exact });
    expect(e2.payload).toEqual({ repo_id: 1, repo_full_name: 'a/b', pr_number: 2, oversized: true });
  });

  it('with small caps, full queues stop their producer at a marker and the walk returns to ReposListing', async () => {
    const repos = makeRepos([{ prs: 4 }, { prs: 0 }, { prs: 8 }, { prs: 2 }, { prs: 5 }, { prs: 3 }, { prs: 1 }]);
    const host = new MemoryHost(repos, 3, () => ({ status: 'ok', diff: 'd', rate: null }));
    const w = await walk(host, { pendingRepos: 2, pendingPrs: 3 });
    expectEveryPrOnce(repos, w.diffs, w.pulls);
    expect(w.diffs).toHaveLength(23);
    // ReposListing is entered again after the first batch of repos drained.
    const returns = w.phases.filter((p, i) => p === 'ReposListing' && i > 0);
    expect(returns.length).toBeGreaterThanOrEqual(3);
    // A page of 3 repos with room for 2 is read again from after its last taken repo.
    expect(host.calls.filter((c) => c === 'repos:1')).toHaveLength(2);
    // A repo with more PRs than the PR queue holds is listed in several rounds, resuming mid-page.
    expect(host.calls.filter((c) => c.startsWith('pulls:acme/repo-2:')).length).toBeGreaterThanOrEqual(3);
    expect(host.calls).toHaveLength(w.steps);
  });

  it('a step whose commit was lost (crash) is replayed from the committed cursor: no gaps, only replayed ids repeat', async () => {
    const repos = makeRepos([{ prs: 6 }, { prs: 4 }, { prs: 9 }]);
    const host = new MemoryHost(repos, 2, defaultDiffs);
    const w = await walk(host, { pendingRepos: 2, pendingPrs: 4 }, (step) => step % 3 === 0);
    expectEveryPrOnce(repos, w.diffs, w.pulls);
    const ids = w.diffs.map((d) => backfillEventId(d.repoId, d.prNumber));
    // Replays produce the same ids, which the ingest dedup absorbs.
    expect(ids.length).toBeGreaterThan(new Set(ids).size);
  });

  it('an empty installation finishes after one call', async () => {
    const host = new MemoryHost([], 100, defaultDiffs);
    const w = await walk(host, SPEC_CAPS);
    expect(host.calls).toEqual(['repos:1']);
    expect(w.cursor.phase).toBe('Done');
  });

  it('a listing page that shifted upstream resumes after the last repo taken', async () => {
    const repos = makeRepos([{ prs: 1 }, { prs: 1 }, { prs: 1 }, { prs: 1 }]);
    const host = new MemoryHost(repos, 4, () => ({ status: 'ok', diff: 'd', rate: null }));
    const names = new Map<number, string>();
    let c = initialCursor();
    const caps = { pendingRepos: 2, pendingPrs: 10 };
    const r1 = await stepBackfill(c, { api: host, repoName: async (id) => names.get(id) ?? null, signal }, caps);
    expect(r1.cursor.pending_repos).toEqual([1000, 1001]);
    expect(r1.cursor.repos_resume_after).toBe(1001);
    for (const r of r1.listed) names.set(r.id, r.full_name);
    // A new repo appears at the top of the listing before the walk comes back.
    host.repos.unshift({ ...makeRepos([{ prs: 1 }])[0]!, id: 999, full_name: 'acme/new' });
    c = r1.cursor;
    c.pending_repos = [];
    c.phase = 'ReposListing';
    const r2 = await stepBackfill(c, { api: host, repoName: async () => null, signal }, caps);
    // 1003 moved to page 2, where the next listing step finds it; nothing is skipped.
    expect(r2.cursor.pending_repos).toEqual([1002]);
    expect(r2.cursor).toMatchObject({ repos_resume_page: 2, repos_resume_after: null });
  });
});
