/**
 * Integration: repo indexer sessions end to end on a real node (spec §4.4, §8; INTERFACE
 * §6): after the admin install, each listed repo up to the tenant's cap gets an
 * `index/sync` (repo, clone URL, a fresh installation token) on its own daemon URL and is
 * polled to `ready`; a push to the default branch syncs again at the pushed sha, a push
 * elsewhere does not; a repo over the cap is not indexed and a slash command there says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { seedRepos, FakeIndexerDaemon } from 'connector-service/testing';
import { until } from '../support/until.js';

let h: CodehostHarness;
let daemon: FakeIndexerDaemon;
const P = 8_400_000 + Math.floor(Math.random() * 100_000);
const OWNER = `idx-org-${P}`;

beforeAll(async () => {
  daemon = await FakeIndexerDaemon.start();
  daemon.set({ indexingPolls: 0 });
  h = await startCodehostHarness({
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template,
    SERVICE_REPO_CAP_PER_TENANT: '2',
  });
});
afterAll(async () => {
  await h?.stop();
  await daemon?.close();
});

const rows = async (installId: string) =>
  (
    await h.node.pool.query(
      `SELECT repo_id, repo_full_name, status, last_indexed_sha, daemon_url, error FROM repo_index_state
       WHERE install_id = $1 ORDER BY repo_id`,
      [installId],
    )
  ).rows as Array<{
    repo_id: string;
    repo_full_name: string;
    status: string;
    last_indexed_sha: string | null;
    daemon_url: string;
    error: string | null;
  }>;

function push(repo: { id: number; full_name: string }, ref: string, after: string) {
  const p = forInstallation(examplePayload('push', undefined, 4), P) as Record<string, any>;
  return {
    ...p,
    ref,
    after,
    deleted: false,
    repository: {
      ...p.repository,
      id: repo.id,
      full_name: repo.full_name,
      default_branch: 'main',
      clone_url: `https://github.com/${repo.full_name}.git`,
    },
  };
}

describe('codehost repo indexer sessions', () => {
  it(
    'syncs listed repos up to the cap, follows pushes to the default branch, and says when a repo is not indexed',
    { timeout: 40_000 },
    async () => {
      const t = await h.tenant('indexer');
      h.gh.addInstallation(P, OWNER);
      const repos = seedRepos(h.gh.pulls, P, OWNER, [0, 0, 0], 600_000 + (P % 1000) * 10);
      const installId = await h.install(t, P);

      const ready = await until(
        'two repos indexed',
        async () => {
          const r = await rows(installId);
          return r.length === 2 && r.every((x) => x.status === 'ready') ? r : null;
        },
        { timeoutMs: 20_000 },
      );
      // Cap 2: the first two listed repos; the third has no row and no daemon.
      expect(ready.map((r) => Number(r.repo_id))).toEqual([repos[0]!.id, repos[1]!.id]);
      for (const [i, r] of ready.entries()) {
        expect(r.daemon_url).toBe(`${daemon.url}${daemon.pathOf(installId, repos[i]!.id)}`);
        expect(r.last_indexed_sha).toMatch(/^head0+$/);
      }
      // Only this install's daemons are looked at: the node serves whatever installs its database holds.
      const mine = (method: string) =>
        daemon.callsOf(method).filter((c) => c.path.startsWith(`/daemons/${installId}/`));
      const syncs = mine('index/sync');
      expect(syncs.map((c) => c.path).sort()).toEqual(
        [daemon.pathOf(installId, repos[0]!.id), daemon.pathOf(installId, repos[1]!.id)].sort(),
      );
      for (const c of syncs) {
        expect(c.params).toMatchObject({
          repo_full_name: expect.stringMatching(new RegExp(`^${OWNER}/repo-[01]$`)),
          clone_url: expect.stringMatching(/\.git$/),
          sha: null,
        });
        // A real installation token the fake GitHub minted for this installation.
        expect(h.gh.tokens.get(c.params.access_token as string)?.installationId).toBe(P);
      }
      expect(mine('index/status').length).toBeGreaterThanOrEqual(2);

      // A push to the default branch syncs at the pushed sha; a push to another branch does not.
      const sha = 'e'.repeat(40);
      expect((await h.deliver('push', push(repos[0]!, 'refs/heads/feature', 'f'.repeat(40)))).status).toBe(202);
      expect((await h.deliver('push', push(repos[0]!, 'refs/heads/main', sha))).status).toBe(202);
      await until('re-indexed at the pushed sha', async () =>
        (await rows(installId)).find(
          (r) => Number(r.repo_id) === repos[0]!.id && r.last_indexed_sha === sha && r.status === 'ready',
        ),
      );
      const again = daemon.callsOf('index/sync', daemon.pathOf(installId, repos[0]!.id));
      expect(again.map((c) => c.params.sha)).toEqual([null, sha]);

      // A slash command in the repo over the cap answers plainly that it is not indexed.
      const comment = forInstallation(examplePayload('issue_comment', 'created'), P) as Record<string, any>;
      const event = {
        ...comment,
        repository: { ...comment.repository, id: repos[2]!.id, full_name: repos[2]!.full_name },
        issue: { ...comment.issue, number: 5 },
        comment: { ...comment.comment, id: 990_000_000 + (P % 1000), body: '/service explain Thing' },
      };
      await h.deliver('issue_comment', event);
      const reply = await until('the not-indexed reply', async () =>
        [...h.gh.repos.comments.values()].find((c) => c.repo === repos[2]!.full_name && c.issue_number === 5),
      );
      expect(reply.body).toContain('not indexed');
      expect(reply.body).toContain('cap of 2');
      expect(mine('tools/call')).toHaveLength(0);
    },
  );
});
