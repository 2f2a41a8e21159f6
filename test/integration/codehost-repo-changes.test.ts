/**
 * Integration: repos added to and removed from a GitHub installation after its installs
 * (`installation_repositories` webhooks, GitHub's recorded payloads), and uninstall, on a
 * real node with the fake GitHub and the fake indexer daemon (spec §3.2, §4.4, §8;
 * INTERFACE §3, §4, §6).
 * - Added repos, for every active install bound to the installation: an `index/sync`
 *   each within the tenant's repo cap, and their PRs in the PR-diff backfill (a finished
 *   walk reopens and completes again).
 * - Removed repos lose their index rows (freeing the cap), and a slash command there
 *   answers that the repo is not indexed; added again, they are indexed again.
 * - An uninstalled install gets no `index/sync` from a later push nor a slash command.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { seedRepos, type FakeRepo } from 'connector-service/testing';
import { FakeIndexerDaemon } from 'connector-service/testing';
import { until } from '../support/until.js';

let h: CodehostHarness;
let daemon: FakeIndexerDaemon;
const P = 8_700_000 + Math.floor(Math.random() * 100_000);
const OWNER = `chg-org-${P}`;
const FIRST_ID = 700_000 + (P % 1000) * 20;

beforeAll(async () => {
  daemon = await FakeIndexerDaemon.start();
  daemon.set({ indexingPolls: 0 });
  h = await startCodehostHarness({
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template,
    SERVICE_REPO_CAP_PER_TENANT: '3',
  });
});
afterAll(async () => {
  await h?.stop();
  await daemon?.close();
});

type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;

const rows = async (installId: string) =>
  (
    await h.node.pool.query(`SELECT repo_id, status FROM repo_index_state WHERE install_id = $1 ORDER BY repo_id`, [
      installId,
    ])
  ).rows.map((r) => ({
    repo_id: Number(r.repo_id),
    status: r.status as string,
  }));

const readyRepos = async (installId: string, n: number) =>
  until(
    `${n} repos indexed`,
    async () => {
      const r = await rows(installId);
      return r.length === n && r.every((x) => x.status === 'ready') ? r.map((x) => x.repo_id) : null;
    },
    { timeoutMs: 20_000 },
  );

const backfillComplete = (t: Tenant, installId: string, prsDone: number) =>
  until(
    `backfill complete with ${prsDone} PRs`,
    async () => {
      const body = (await (await h.api(`/api/v1/connectors/installs/${installId}`, t)).json()) as {
        backfill: { state: string; prs_done?: number };
      };
      return body.backfill.state === 'complete' && body.backfill.prs_done === prsDone ? body.backfill : null;
    },
    { timeoutMs: 20_000 },
  );

function reposChanged(action: 'added' | 'removed', repos: FakeRepo[]) {
  const p = forInstallation(examplePayload('installation_repositories', action), P) as Record<string, any>;
  const list = repos.map((r) => ({
    id: r.id,
    node_id: `R_${r.id}`,
    name: r.full_name.split('/')[1],
    full_name: r.full_name,
    private: true,
  }));
  return {
    ...p,
    repositories_added: action === 'added' ? list : [],
    repositories_removed: action === 'removed' ? list : [],
  };
}

function slash(repo: FakeRepo, issue: number, body: string) {
  const p = forInstallation(examplePayload('issue_comment', 'created'), P) as Record<string, any>;
  return {
    ...p,
    repository: { ...p.repository, id: repo.id, full_name: repo.full_name },
    issue: { ...p.issue, number: issue },
    comment: { ...p.comment, id: 980_000_000 + (P % 1000) * 100 + issue, body },
  };
}

const syncedPaths = () => daemon.callsOf('index/sync').map((c) => c.path);

describe('codehost installation_repositories', () => {
  let t1: Tenant;
  let t2: Tenant;
  let i1: string;
  let i2: string;
  let base: FakeRepo;
  let added: FakeRepo[];

  it(
    'repos added after install get an index within the cap and their PRs backfilled, in every install of the installation',
    { timeout: 60_000 },
    async () => {
      [t1, t2] = [await h.tenant('changes-1'), await h.tenant('changes-2')];
      h.gh.addInstallation(P, OWNER);
      base = seedRepos(h.gh.pulls, P, OWNER, [2], FIRST_ID)[0]!;
      i1 = await h.install(t1, P);
      i2 = await h.install(t2, P);
      for (const [t, i] of [
        [t1, i1],
        [t2, i2],
      ] as const) {
        expect(await readyRepos(i, 1)).toEqual([base.id]);
        await backfillComplete(t, i, 2);
      }

      // Three repos added; each tenant's cap of 3 leaves room for two of them.
      added = seedRepos(h.gh.pulls, P, `${OWNER}-b`, [3, 1, 0], FIRST_ID + 10);
      const res = await h.deliver('installation_repositories', reposChanged('added', added));
      expect(res.status).toBe(202);
      expect(await res.json()).toMatchObject({ installs: 2 });

      for (const [t, i] of [
        [t1, i1],
        [t2, i2],
      ] as const) {
        expect(await readyRepos(i, 3)).toEqual([base.id, added[0]!.id, added[1]!.id]);
        for (const r of added.slice(0, 2)) expect(syncedPaths()).toContain(daemon.pathOf(i, r.id));
        expect(syncedPaths()).not.toContain(daemon.pathOf(i, added[2]!.id));
        // The finished walk reopened for the added repos alone and ended again.
        const backfill = await backfillComplete(t, i, 6);
        expect(backfill).toMatchObject({ repos_done: 4 });
        const ids = await h.eventIds(t, i);
        const expected = [`${added[0]!.id}:1`, `${added[0]!.id}:2`, `${added[0]!.id}:3`, `${added[1]!.id}:1`].map(
          (k) => `backfill:pr-diff:${k}`,
        );
        for (const id of expected) expect(ids.filter((x) => x === id)).toHaveLength(1);
      }
      // The base repo's PRs were not walked again.
      expect(h.gh.callsTo('GET', new RegExp(`^/repos/${base.full_name}/pulls$`))).toHaveLength(2);
    },
  );

  it(
    'removed repos are no longer indexed, a slash command there says so, and an added-again repo is indexed again',
    { timeout: 60_000 },
    async () => {
      const gone = added[0]!;
      gone.gone = true;
      expect((await h.deliver('installation_repositories', reposChanged('removed', [gone]))).status).toBe(202);
      for (const i of [i1, i2]) {
        await until('the removed repo unindexed', async () =>
          (await rows(i)).some((r) => r.repo_id === gone.id) ? null : true,
        );
      }
      const registry = await h.node.pool.query(
        'SELECT install_id FROM codehost_repos WHERE repo_id = $1 AND removed_at IS NOT NULL',
        [gone.id],
      );
      expect(registry.rows.map((r) => r.install_id).sort()).toEqual([i1, i2].sort());

      expect((await h.deliver('issue_comment', slash(gone, 7, '/service explain Thing'))).status).toBe(202);
      const reply = await until('the not-indexed reply', async () =>
        [...h.gh.repos.comments.values()].find((c) => c.repo === gone.full_name && c.issue_number === 7),
      );
      expect(reply.body).toContain('This repository is not indexed');
      expect(reply.body).toContain('removed from the GitHub App installation');
      expect(daemon.callsOf('tools/call')).toHaveLength(0);
      expect((await rows(i1)).map((r) => r.repo_id)).not.toContain(gone.id);

      // Added again: the cap has room (the removal freed it), so it is indexed again.
      gone.gone = false;
      const before = daemon.callsOf('index/sync', daemon.pathOf(i1, gone.id)).length;
      expect((await h.deliver('installation_repositories', reposChanged('added', [gone]))).status).toBe(202);
      expect(await readyRepos(i1, 3)).toEqual([base.id, gone.id, added[1]!.id]);
      expect(daemon.callsOf('index/sync', daemon.pathOf(i1, gone.id)).length).toBe(before + 1);
    },
  );

  it('an uninstalled install gets no index/sync from a later push or slash command', { timeout: 60_000 }, async () => {
    expect((await h.api(`/api/v1/connectors/installs/${i2}`, t2, { method: 'DELETE' })).status).toBe(200);
    const toI2 = () => daemon.calls.filter((c) => c.path.includes(`/${i2}/`)).length;
    const before = toI2();

    const p = forInstallation(examplePayload('push', undefined, 4), P) as Record<string, any>;
    const sha = 'd'.repeat(40);
    const push = {
      ...p,
      ref: 'refs/heads/main',
      after: sha,
      deleted: false,
      repository: {
        ...p.repository,
        id: base.id,
        full_name: base.full_name,
        default_branch: 'main',
        clone_url: `https://github.com/${base.full_name}.git`,
      },
    };
    const res = await h.deliver('push', push);
    expect(await res.json()).toMatchObject({ installs: 1 });
    expect((await h.deliver('issue_comment', slash(base, 8, '/service explain Other'))).status).toBe(202);
    // The remaining install syncs and answers: both events went through.
    await until('the other install synced at the pushed sha', async () =>
      daemon.callsOf('index/sync', daemon.pathOf(i1, base.id)).some((c) => c.params.sha === sha),
    );
    await until('the slash reply', async () =>
      [...h.gh.repos.comments.values()].find((c) => c.repo === base.full_name && c.issue_number === 8),
    );
    expect(toI2()).toBe(before);
  });
});
