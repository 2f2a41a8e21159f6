/**
 * actor: the repo indexer session on the real kernel and Postgres against the fake
 * daemon, with short timings injected: index/sync then index/status polling, the indexing
 * lock extended past its default while the daemon keeps reporting (spec §8: long first
 * indexes), a lock that lapses when the daemon goes silent, refused URLs that never reach
 * the network, and the per-tenant repo cap.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { IndexerTimings } from '../../src/actors/codehost/indexer-ports.js';
import { indexerSessionKey } from '../../src/actors/codehost/indexer-protocol.js';
import { indexerSessionActor } from '../../src/actors/codehost/indexer-session.js';
import type { ActorAsk } from '../../src/runtime/ports.js';
import { Kernel } from '../../src/runtime/kernel.js';
import type { ActorKey } from '../../src/runtime/names.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setInstallStatus } from '../../src/store/installs.js';
import { getIndexState } from '../../src/store/repo-index-state.js';
import { createTenant } from '../../src/store/tenants.js';
import { FakeIndexerDaemon } from 'connector-service/testing';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

const log = pino({ level: 'silent' });
const TIMINGS: Partial<IndexerTimings> = {
  rpcTimeoutMs: 1000,
  toolTimeoutMs: 1000,
  firstPollMs: 40,
  maxPollMs: 80,
  lockMs: 400,
};
let pool: ReturnType<typeof createPool>;
let daemon: FakeIndexerDaemon;
const kernels: Kernel[] = [];

beforeAll(async () => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  daemon = await FakeIndexerDaemon.start();
});
afterAll(async () => {
  for (const k of kernels) await k.stop();
  await daemon?.close();
  await pool?.end();
});
beforeEach(() => daemon.reset());

async function session(opts: { template?: string | null; cap?: number } = {}) {
  const tenant = await createTenant(pool, TEST_MASTER_KEY, 'indexer');
  const install = await createInstall(pool, {
    tenantId: tenant.tenant_id,
    connectorId: 'codehost',
    externalId: String(Math.floor(Math.random() * 1e9)),
  });
  const kernel = new Kernel({ log });
  kernels.push(kernel);
  const actors: ActorAsk = {
    ask: <T>(key: ActorKey, msg: { type: string } & Record<string, unknown>, o: { timeoutMs?: number } = {}) =>
      kernel.dispatch(key, msg, { deadline: Date.now() + (o.timeoutMs ?? 10_000) }) as Promise<T>,
  };
  kernel.register(
    indexerSessionActor({
      pool,
      log,
      actors,
      lockOwner: 'ns-test/node-test',
      template: opts.template === undefined ? daemon.template : opts.template,
      repoCap: opts.cap ?? 50,
      accessToken: async () => 'ghs_fresh_token',
      timings: TIMINGS,
    }),
  );
  const repo = (id: number) => ({ full_name: `acme/r${id}`, clone_url: `https://example.test/acme/r${id}.git` });
  const sync = (repoId: number, sha: string | null = null) =>
    actors.ask(indexerSessionKey(install.install_id, repoId), { type: 'sync', sha, repo: repo(repoId) });
  const tool = (repoId: number) =>
    actors.ask(indexerSessionKey(install.install_id, repoId), {
      type: 'tool',
      name: 'service_explain',
      arguments: { symbol: 'X' },
      repo: repo(repoId),
    });
  const state = (repoId: number) => getIndexState(pool, install.install_id, repoId);
  return { install, tenant, sync, tool, state };
}

describe('actor: repo indexer session', () => {
  it('syncs with a fresh token, polls while indexing, and extends the lock past its default until ready', async () => {
    const s = await session();
    daemon.set({ indexingPolls: 14 }); // ~1 s of indexing against a 400 ms lock
    const sha = 'c'.repeat(40);
    expect(await s.sync(11, sha)).toEqual({ status: 'indexing' });
    const first = (await s.state(11))!;
    expect(first).toMatchObject({
      status: 'indexing',
      target_sha: sha,
      lock_owner: 'ns-test/node-test',
      daemon_url: `${daemon.url}${daemon.pathOf(s.install.install_id, 11)}`,
    });
    expect(daemon.callsOf('index/sync')[0]!.params).toEqual({
      repo_full_name: 'acme/r11',
      clone_url: 'https://example.test/acme/r11.git',
      access_token: 'ghs_fresh_token',
      sha,
    });
    const firstLock = Date.parse(first.lock_expires_at!);
    // Past the first lock's expiry the index is still running and its lock has moved on.
    const mid = await until('a read of the state past the first lock expiry', async () => {
      const asked = Date.now();
      const r = await s.state(11);
      return asked > firstLock && r;
    });
    expect(mid.status).toBe('indexing');
    expect(Date.parse(mid.lock_expires_at!)).toBeGreaterThan(firstLock);
    expect(mid.progress).toMatchObject({ files_done: expect.any(Number) });
    const ready = await until(
      'repo 11 indexed (ready)',
      async () => {
        const r = await s.state(11);
        return r?.status === 'ready' ? r : null;
      },
      { timeoutMs: 5000 },
    );
    expect(ready).toMatchObject({ last_indexed_sha: sha, lock_owner: null, lock_expires_at: null, error: null });
    expect(daemon.callsOf('index/status').length).toBeGreaterThanOrEqual(15);
    // The same sha again is a no-op.
    expect(await s.sync(11, sha)).toEqual({ status: 'unchanged' });
    expect(daemon.callsOf('index/sync')).toHaveLength(1);
  });

  it('a daemon that stops reporting lets the lock lapse and the index fails', async () => {
    const s = await session();
    daemon.set({ indexingPolls: 1000 });
    expect(await s.sync(12, 'd'.repeat(40))).toEqual({ status: 'indexing' });
    await until('a status poll of the daemon', async () => daemon.callsOf('index/status').length >= 1, {
      timeoutMs: 5000,
    });
    daemon.set({ httpStatus: 503 });
    const failed = await until(
      'repo 12 failed',
      async () => {
        const r = await s.state(12);
        return r?.status === 'failed' ? r : null;
      },
      { timeoutMs: 5000 },
    );
    expect(failed.error).toMatch(/stopped reporting.*HTTP 503/);
    expect(failed.lock_owner).toBeNull();
  });

  it('a refused daemon URL fails the repo without any request', async () => {
    const s = await session({ template: 'http://127.0.0.1:1/{install}{repo}' });
    expect(await s.sync(13)).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/separate path segments/),
    });
    expect(await s.tool(13)).toMatchObject({ ok: false, kind: 'no_daemon' });
    expect(daemon.calls).toHaveLength(0);
  });

  it('admits repos up to the tenant cap; a session of an uninstalled install does nothing', async () => {
    const s = await session({ cap: 2 });
    expect((await s.sync(21)).status).toBe('indexing');
    expect((await s.sync(22)).status).toBe('indexing');
    expect(await s.sync(23)).toEqual({ status: 'capped', used: 2, cap: 2 });
    expect(await s.tool(23)).toMatchObject({ ok: false, kind: 'capped' });
    expect(await s.state(23)).toBeNull();
    await setInstallStatus(pool, s.install.install_id, 'uninstalled');
    expect(await s.sync(23)).toEqual({ status: 'inactive' });
  });
});
