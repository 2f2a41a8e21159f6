/**
 * actor: the code-host backfill walker on the real kernel, with its real rate gate,
 * Postgres and the real Octokit against the fake GitHub over HTTP; KV and the ingest
 * publish are in memory. Small caps are injected here (spec caps are unit-tested):
 * the walk exercises full queues and the return to ReposListing, exactly one upstream
 * call per tick, 406s and >1 MB diffs, and a secondary rate limit's pause.
 */
import { Octokit } from '@octokit/rest';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codehostBackfillActor } from '../../src/actors/codehost/codehost-backfill.js';
import { codehostBackfillKey } from '../../src/actors/codehost/codehost-backfill-protocol.js';
import { codehostRateActor } from '../../src/actors/codehost/codehost-rate.js';
import { installActor } from '../../src/actors/install.js';
import { octokitApi } from '../../src/connectors/codehost/backfill/octokit-api.js';
import type { BackfillCaps } from '../../src/connectors/codehost/backfill/backfill-cursor.js';
import type { ActorAsk, IngestEvent } from '../../src/runtime/ports.js';
import { Kernel } from '../../src/runtime/kernel.js';
import type { ActorKey } from '../../src/runtime/names.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, getInstallById } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { FakeGitHub, generateAppKeyPair } from 'connector-service/testing';
import { memoryKv } from '../support/github-edge.js';
import { seedRepos, type FakeRepo } from 'connector-service/testing';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

const log = pino({ level: 'silent' });
const QUIET = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
let pool: ReturnType<typeof createPool>;
let gh: FakeGitHub;

beforeAll(async () => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  gh = await FakeGitHub.start(4242, generateAppKeyPair().publicKeyPem);
});
afterAll(async () => {
  await gh?.close();
  await pool?.end();
});

let nextInstallation = 7_000_000 + Math.floor(Math.random() * 1_000_000);

async function walker(caps?: BackfillCaps) {
  const installationId = nextInstallation++;
  gh.addInstallation(installationId);
  const token = `ghs_walker_${installationId}`;
  gh.tokens.set(token, { installationId, createdAt: 0, expiresAt: Date.now() + 3_600_000 });
  const tenant = await createTenant(pool, TEST_MASTER_KEY, 'walker');
  const install = await createInstall(pool, {
    tenantId: tenant.tenant_id,
    connectorId: 'codehost',
    externalId: String(installationId),
  });
  const kernel = new Kernel({ log });
  const actors: ActorAsk = {
    ask: <T>(key: ActorKey, msg: { type: string } & Record<string, unknown>, opts: { timeoutMs?: number } = {}) =>
      kernel.dispatch(key, msg, { deadline: Date.now() + (opts.timeoutMs ?? 10_000) }) as Promise<T>,
  };
  const kv = memoryKv();
  const published: IngestEvent[] = [];
  /** INTERFACE §9.5: the listing's `pull_request.backfill` events, apart from the diffs. */
  const listed: IngestEvent[] = [];
  kernel.register(
    codehostBackfillActor({
      pool,
      log,
      actors,
      cursors: kv,
      publish: async (e) => {
        (e.kind === 'pull_request.backfill' ? listed : published).push(e);
      },
      api: () => octokitApi(new Octokit({ baseUrl: gh.url, auth: token, log: QUIET })),
      ...(caps ? { caps } : {}),
    }),
  );
  kernel.register(codehostRateActor({ kv }));
  // The walker asks it after a terminal failure, to learn whether an uninstall was under way.
  kernel.register(
    installActor({
      pool,
      drivers: new Map(),
      commit: () => Promise.reject(new Error('no ingest in this test')),
    }),
  );
  const done = async (timeoutMs = 20_000) => {
    let seen: Awaited<ReturnType<typeof getInstallById>> = null;
    return until(
      'the backfill complete or failed',
      async () => {
        seen = await getInstallById(pool, install.install_id);
        return (seen?.backfill.state === 'complete' || seen?.backfill.state === 'failed') && seen;
      },
      { timeoutMs, everyMs: 25, explain: () => `backfill: ${JSON.stringify(seen?.backfill)}` },
    );
  };
  const start = () => actors.ask(codehostBackfillKey(install.install_id), { type: 'resume' });
  const backfillCalls = () =>
    gh.calls.filter(
      (c) =>
        c.at >= t0 &&
        /^\/installation\/repositories$|^\/repos\/[^/]+\/[^/]+\/pulls(\/\d+)?$/.test(c.path) &&
        c.token === token,
    );
  const t0 = Date.now();
  return { installationId, install, kernel, published, listed, done, start, backfillCalls, kv };
}

function expectedIds(repos: FakeRepo[]): string[] {
  return repos.flatMap((r) => r.pulls.map((p) => `backfill:pr-diff:${r.id}:${p.number}`)).sort();
}

describe('actor: code-host backfill walker', () => {
  it('walks every repo and page with small caps, returning to ReposListing, one upstream call per tick', async () => {
    const w = await walker({ pendingRepos: 2, pendingPrs: 3 });
    const repos = seedRepos(gh.pulls, w.installationId, `org-${w.installationId}`, [4, 0, 8, 2, 1]);
    await w.start();
    const install = await w.done();
    expect(install.backfill).toMatchObject({
      state: 'complete',
      phase: 'Done',
      repos_listed: 5,
      repos_done: 5,
      prs_done: 15,
      prs_oversized: 2,
    });
    // Every PR exactly once (no crash, so no replay either), its diff and its listing fields.
    expect(w.published.map((e) => e.id).sort()).toEqual(expectedIds(repos));
    expect(w.listed.map((e) => e.id.replace('backfill:pr:', 'backfill:pr-diff:')).sort()).toEqual(expectedIds(repos));
    // Exactly one upstream call per tick, counted by the fake.
    const calls = w.backfillCalls();
    expect(calls).toHaveLength(install.backfill.steps as number);
    // The repo queue (cap 2) filled mid-page: page 1 is listed again from the marker, after diffs were fetched.
    const listing = calls.map((c, i) => ({ c, i })).filter(({ c }) => c.path === '/installation/repositories');
    expect(listing.length).toBeGreaterThanOrEqual(3);
    const firstDiff = calls.findIndex((c) => /\/pulls\/\d+$/.test(c.path));
    expect(listing.some(({ i }) => i > firstDiff)).toBe(true);
    expect(listing.every(({ c }) => c.query.per_page === '100')).toBe(true);
    const pulls = calls.filter((c) => /\/pulls$/.test(c.path));
    expect(pulls.every((c) => c.query.state === 'all' && c.query.per_page === '100')).toBe(true);

    const byId = new Map(w.published.map((e) => [e.id, e]));
    const r2 = repos[2]!;
    expect(byId.get(`backfill:pr-diff:${r2.id}:5`)!.payload).toEqual({
      repo_id: r2.id,
      repo_full_name: r2.full_name,
      pr_number: 5,
      oversized: true,
    });
    expect(byId.get(`backfill:pr-diff:${r2.id}:7`)!.payload).toEqual({
      repo_id: r2.id,
      repo_full_name: r2.full_name,
      pr_number: 7,
      oversized: true,
    });
    expect(byId.get(`backfill:pr-diff:${r2.id}:8`)!).toMatchObject({
      kind: 'pull_request.backfill_diff',
      connectorId: 'codehost',
      payload: {
        repo_id: r2.id,
        repo_full_name: r2.full_name,
        pr_number: 8,
        oversized: false,
        diff: 'diff --git a/f8 b/f8\n+line 8\n',
      },
    });
    const diffCall = calls.find((c) => /\/pulls\/\d+$/.test(c.path));
    expect(diffCall).toBeDefined();
    await w.kernel.stop();
  });

  it('a secondary rate limit pauses the walk for its retry-after, then it finishes with nothing lost', async () => {
    const w = await walker();
    const repos = seedRepos(gh.pulls, w.installationId, `org-${w.installationId}`, [3]);
    gh.fail({
      path: new RegExp(`^/repos/org-${w.installationId}/repo-0/pulls/2$`),
      status: 403,
      headers: { 'retry-after': '1' },
      body: { message: 'You have exceeded a secondary rate limit' },
    });
    await w.start();
    const install = await w.done();
    expect(install.backfill).toMatchObject({ state: 'complete' });
    expect(w.published.map((e) => e.id).sort()).toEqual(expectedIds(repos));
    const diffs = w.backfillCalls().filter((c) => c.path.endsWith('/pulls/2'));
    expect(diffs).toHaveLength(2);
    expect(diffs[1]!.at - diffs[0]!.at).toBeGreaterThanOrEqual(1000);
    await w.kernel.stop();
  });

  it('a repo deleted after it was listed is skipped; the walk completes', async () => {
    const w = await walker();
    const repos = seedRepos(gh.pulls, w.installationId, `org-${w.installationId}`, [2, 2]);
    // Gone after the listing: the pulls listing answers 404.
    gh.fail({ path: new RegExp(`^/repos/org-${w.installationId}/repo-0/pulls$`), status: 404, times: 1 });
    await w.start();
    const install = await w.done();
    expect(install.backfill).toMatchObject({ state: 'complete', repos_skipped: 1, prs_done: 2 });
    expect(w.published.map((e) => e.id).sort()).toEqual(expectedIds([repos[1]!]));
    await w.kernel.stop();
  });

  it('an installation that refuses the listing fails the backfill with the reason', async () => {
    const w = await walker();
    gh.fail({ path: /^\/installation\/repositories$/, status: 404, times: 1 });
    await w.start();
    const install = await w.done();
    expect(install.backfill).toMatchObject({ state: 'failed', reason: expect.stringContaining('installation') });
    await w.kernel.stop();
  });
});
