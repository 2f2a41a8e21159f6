/**
 * Integration: the PR-diff backfill end to end on a real node (spec §3.2, §6.1 rule 3;
 * INTERFACE §3, §4) against the fake GitHub: the admin install starts it, the walker
 * pages through repos and pulls at per_page=100, fetches each diff with the diff media
 * type, and every PR arrives once in the install's events through the ingest stream,
 * 406s and diffs over 1 MB flagged `oversized` without a diff. Progress shows in the
 * install record's `backfill` field; the fake counts exactly one upstream call per step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodehostHarness, type CodehostHarness } from '../support/github-harness.js';
import { seedRepos, FakeIndexerDaemon } from 'connector-service/testing';
import { until } from '../support/until.js';

let h: CodehostHarness;
let daemon: FakeIndexerDaemon;
const P = 8_100_000 + Math.floor(Math.random() * 100_000);

beforeAll(async () => {
  daemon = await FakeIndexerDaemon.start();
  h = await startCodehostHarness({ SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template });
  // A large installation's budget (x-ratelimit-limit), so ~200 steps need no waiting.
  h.gh.pulls.rate = { limit: 100_000, remaining: 99_000, resetS: Math.floor(Date.now() / 1000) + 3600 };
});
afterAll(async () => {
  await h?.stop();
  await daemon?.close();
});

interface Ev {
  id: string;
  kind: string;
  connector_id: string;
  payload: Record<string, unknown>;
}

async function events(t: { auth: { authorization: string } }, installId: string): Promise<Ev[]> {
  const out: Ev[] = [];
  let cursor: string | null = null;
  do {
    const res = await h.api(
      `/api/v1/connectors/installs/${installId}/events?kind=pull_request.backfill_diff&limit=500${cursor ? `&cursor=${cursor}` : ''}`,
      t,
    );
    const body = (await res.json()) as { events: Ev[]; next_cursor: string | null };
    out.push(...body.events);
    cursor = body.next_cursor;
  } while (cursor);
  return out;
}

describe('codehost PR-diff backfill', () => {
  it(
    'walks several repos and pages; 406s and >1 MB diffs are oversized; every PR once; one upstream call per step',
    { timeout: 180_000 },
    async () => {
      const t = await h.tenant('backfill');
      h.gh.addInstallation(P, 'acme-org');
      // 103 repos: two listing pages; repo-0 has 102 PRs: two pulls pages.
      const counts = [102, 9, 0, ...Array.from({ length: 100 }, (_, i) => (i % 25 === 0 ? 1 : 0))];
      const repos = seedRepos(h.gh.pulls, P, 'acme-org', counts);
      const installId = await h.install(t, P);

      const record = await until(
        'backfill complete',
        async () => {
          const res = await h.api(`/api/v1/connectors/installs/${installId}`, t);
          const body = (await res.json()) as { backfill: Record<string, unknown> };
          return body.backfill.state === 'complete' || body.backfill.state === 'failed' ? body : null;
        },
        // About 220 steps, each a few round trips: generous, for a machine shared with other suites.
        { timeoutMs: 150_000 },
      );
      expect(record.backfill).toMatchObject({
        state: 'complete',
        phase: 'Done',
        repos_listed: 103,
        repos_done: 103,
        prs_done: 115,
      });

      const expected = repos.flatMap((r) => r.pulls.map((p) => `backfill:pr-diff:${r.id}:${p.number}`)).sort();
      const got = await until('every backfill event stored', async () => {
        const evs = await events(t, installId);
        return evs.length >= expected.length ? evs : null;
      });
      expect(got.map((e) => e.id).sort()).toEqual(expected);

      const byId = new Map(got.map((e) => [e.id, e]));
      const r0 = repos[0]!;
      // #5 answered 406, #7's diff is 1 000 002+ bytes of UTF-8 (500 001 two-byte characters).
      expect(byId.get(`backfill:pr-diff:${r0.id}:5`)!.payload).toEqual({
        repo_id: r0.id,
        repo_full_name: r0.full_name,
        pr_number: 5,
        oversized: true,
      });
      expect(byId.get(`backfill:pr-diff:${r0.id}:7`)!.payload).toEqual({
        repo_id: r0.id,
        repo_full_name: r0.full_name,
        pr_number: 7,
        oversized: true,
      });
      expect(byId.get(`backfill:pr-diff:${r0.id}:101`)).toMatchObject({
        kind: 'pull_request.backfill_diff',
        connector_id: 'codehost',
        payload: {
          repo_id: r0.id,
          repo_full_name: r0.full_name,
          pr_number: 101,
          oversized: false,
          diff: 'diff --git a/f101 b/f101\n+line 101\n',
        },
      });
      const oversized = got.filter((e) => e.payload.oversized === true);
      expect(oversized.every((e) => !('diff' in e.payload))).toBe(true);
      expect(oversized.length).toBe(record.backfill.prs_oversized);

      // spec §8: exactly one upstream call per step, counted by the fake (token mints excluded).
      // A step whose commit failed after its call (its publish or cursor save timed out on a
      // loaded machine) runs again from the same cursor and repeats that very request, and
      // the event ids absorb the repeat (ARCHITECTURE.md "Inbound"). So the distinct requests
      // are exactly the committed steps, and every other call is a repeat of one of them.
      const all = h.gh.calls.filter(
        (c) =>
          c.path === '/installation/repositories' || new RegExp(`^/repos/acme-org/[^/]+/pulls(/\\d+)?$`).test(c.path),
      );
      const requestOf = (c: (typeof all)[number]) => `${c.path}?${new URLSearchParams(c.query).toString()}`;
      const calls = [...new Map(all.map((c) => [requestOf(c), c])).values()];
      expect(calls).toHaveLength(record.backfill.steps as number);
      expect(calls.filter((c) => c.path === '/installation/repositories').map((c) => c.query)).toEqual([
        { per_page: '100', page: '1' },
        { per_page: '100', page: '2' },
      ]);
      expect(
        calls
          .filter((c) => c.path === `/repos/${r0.full_name}/pulls`)
          .map((c) => [c.query.state, c.query.per_page, c.query.page]),
      ).toEqual([
        ['all', '100', '1'],
        ['all', '100', '2'],
      ]);
      expect(calls.filter((c) => /\/pulls\/\d+$/.test(c.path))).toHaveLength(115);

      // INTERFACE §9.5: the listing's fields reach the PR's node, with its author.
      const pr = await until('backfilled PR node with its listing fields', async () => {
        const res = await h.api(`/api/v1/graph/nodes?kind=codehost.pull_request&install_id=${installId}&limit=500`, t);
        const body = (await res.json()) as { nodes: Array<{ id: string; external_id: string; props: any }> };
        const node = body.nodes.find((n) => n.external_id === `${r0.full_name}#101`);
        return node && node.props.title && node.props.oversized === false ? node : null;
      });
      expect(pr.props).toMatchObject({ title: 'PR 101', state: 'open', head_sha: 'b'.repeat(40), merged: false });
      const one = (await (await h.api(`/api/v1/graph/nodes/${pr.id}`, t)).json()) as {
        edges: Array<{ type: string; to: string }>;
      };
      const author = one.edges.find((e) => e.type === 'authored_by')!;
      const user = (await (await h.api(`/api/v1/graph/nodes/${author.to}`, t)).json()) as { external_id: string };
      expect(user.external_id).toBe('octocat');
    },
  );
});
