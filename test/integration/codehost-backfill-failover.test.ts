/**
 * Integration: kill -9 of the node walking a PR-diff backfill (spec §3.2: "a crashed
 * worker resumes from the last committed cursor"). Two real `connectors serve`
 * processes share the run's Postgres and a fresh namespace; the walk is slowed by the
 * fake GitHub so it is mid-way when the node owning the walker's shard is killed with
 * SIGKILL. The survivor takes the shard over once the lease expires, resumes the walker
 * from its committed cursor, and the walk finishes with every PR's event exactly once.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codehostBackfillKey } from '../../src/actors/codehost/codehost-backfill-protocol.js';
import { names as makeNames, shardOf } from '../../src/runtime/names.js';
import { createPool } from '../../src/store/db.js';
import { createTenant } from '../../src/store/tenants.js';
import { createUser } from '../../src/store/users.js';
import { FakeGitHub, generateAppKeyPair, seedRepos, FakeIndexerDaemon } from 'connector-service/testing';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { cleanNamespace } from '../support/node.js';
import {
  assertBuilt,
  kill9,
  killAll,
  startServeReady,
  waitReady,
  type ServeProcess,
} from '../support/failover-cluster.js';
import { until } from '../support/until.js';

const SHARDS = 4;
const P = 8_600_000 + Math.floor(Math.random() * 100_000);

describe('integration: backfill walker survives kill -9 of its node', () => {
  let namespace: string;
  let pool: ReturnType<typeof createPool>;
  let nc: NatsConnection;
  let gh: FakeGitHub;
  let daemon: FakeIndexerDaemon;
  const nodes: ServeProcess[] = [];

  beforeAll(async () => {
    assertBuilt();
    namespace = freshNamespace('cbf');
    pool = createPool(testDatabaseUrl(), { max: 3 });
    nc = await connect({ servers: testNatsUrl(), name: 'backfill-failover-test' });
  });

  afterAll(async () => {
    await killAll();
    await nc?.close();
    await pool?.end();
    await gh?.close();
    await daemon?.close();
    if (namespace) await cleanNamespace(namespace);
  });

  it('finishes the walk on the survivor with every PR exactly once', { timeout: 60_000 }, async (ctx) => {
    const keys = generateAppKeyPair();
    const appId = 300_000 + Math.floor(Math.random() * 100_000);
    gh = await FakeGitHub.start(appId, keys.publicKeyPem);
    daemon = await FakeIndexerDaemon.start();
    const adminToken = `admin-${randomBytes(8).toString('hex')}`;
    const env = {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: String(SHARDS),
      SERVICE_LEASE_TTL_S: '3',
      CODEHOST_CONNECTOR_ENABLED: 'true',
      CODEHOST_APP_ID: String(appId),
      CODEHOST_APP_PRIVATE_KEY_PEM: keys.privateKeyPem,
      CODEHOST_WEBHOOK_SECRET: 'whsec-failover',
      CODEHOST_API_URL: gh.url,
      SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template,
      SERVICE_ADMIN_ENDPOINTS: '1',
      SERVICE_ADMIN_API_TOKEN: adminToken,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    };
    nodes.push(...(await Promise.all(['cbf-a', 'cbf-b'].map((id) => startServeReady(id, env, 20_000)))));
    ctx.onTestFailed(() => {
      process.stderr.write(`${nodes.map((n) => `--- ${n.nodeId} ---\n${n.logTail()}`).join('\n')}\n`);
    });
    await Promise.all(nodes.map((n) => waitReady(n, 20_000)));

    gh.addInstallation(P, 'failover-org');
    const repos = seedRepos(gh.pulls, P, 'failover-org', [40, 30, 20]);
    gh.pulls.rate = { limit: 100_000, remaining: 99_000, resetS: Math.floor(Date.now() / 1000) + 3600 };
    // Each backfill call takes 60 ms: ~90 steps are over five seconds, long enough to kill mid-walk.
    gh.pulls.delayMs = 60;
    const expected = repos.flatMap((r) => r.pulls.map((p) => `backfill:pr-diff:${r.id}:${p.number}`)).sort();

    const tenant = await createTenant(pool, TEST_MASTER_KEY, 'failover');
    const { user_id } = await createUser(pool, tenant.tenant_id, 'ops@failover.test');
    const res = await fetch(`${nodes[0]!.url}/api/v1/connectors/codehost/admin/install`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${tenant.api_key}`,
        'x-service-admin-token': adminToken,
      },
      body: JSON.stringify({
        user_id,
        github_installation_id: P,
        account_type: 'Organization',
        account_login: 'failover-org',
        repository_selection: 'all',
      }),
    });
    expect(res.status).toBe(201);
    const { install_id: installId } = (await res.json()) as { install_id: string };

    const stored = async () =>
      Number(
        (
          await pool.query(
            `SELECT count(*) AS n FROM events WHERE install_id = $1 AND kind = 'pull_request.backfill_diff'`,
            [installId],
          )
        ).rows[0].n,
      );
    // Progress is judged by the walk itself (diff calls at the fake GitHub), not by what is
    // stored: on a loaded machine commits lag the walker and arrive in large batches, so a
    // stored count can jump from under a third to all of it between two polls.
    const diffCalls = () => gh.calls.filter((c) => /\/pulls\/\d+$/.test(c.path)).length;
    await until('a third of the PRs walked', async () => (diffCalls() >= expected.length / 3 ? true : null), {
      timeoutMs: 20_000,
    });

    // The node whose lease covers the walker's shard is the one walking.
    const leases = await new Kvm(jetstream(nc)).open(makeNames(namespace).leaseBucket);
    const shard = shardOf(codehostBackfillKey(installId), SHARDS);
    const lease = await leases.get(`shard.${shard}`);
    const ownerId = (JSON.parse(lease!.string()) as { node: string }).node;
    const owner = nodes.find((n) => n.nodeId === ownerId)!;
    const survivor = nodes.find((n) => n.nodeId !== ownerId)!;
    expect(owner).toBeDefined();
    await kill9(owner);
    const killedAt = Date.now();
    const walkedAtKill = diffCalls();
    const atKill = await stored();
    expect(walkedAtKill).toBeLessThan(expected.length);

    const state = await until(
      'backfill finished on the survivor',
      async () => {
        const r = await pool.query(`SELECT backfill_state, backfill_progress FROM installs WHERE install_id = $1`, [
          installId,
        ]);
        const s = r.rows[0] as { backfill_state: string; backfill_progress: Record<string, unknown> };
        return s.backfill_state === 'complete' || s.backfill_state === 'failed' ? s : null;
      },
      { timeoutMs: 40_000 },
    );
    expect(state.backfill_state).toBe('complete');
    const ids = await until(
      'every event stored',
      async () => {
        const r = await pool.query(
          `SELECT id FROM events WHERE install_id = $1 AND kind = 'pull_request.backfill_diff' ORDER BY id`,
          [installId],
        );
        return r.rows.length >= expected.length ? r.rows.map((x) => x.id as string) : null;
      },
      { timeoutMs: 15_000 },
    );
    // Exactly once: every PR, no other id, no id twice (the ingest dedup absorbed any replay).
    expect(ids.sort()).toEqual(expected);
    const dead = await pool.query('SELECT count(*) AS n FROM dead_letters WHERE install_id = $1', [installId]);
    expect(Number(dead.rows[0].n)).toBe(0);
    // The survivor really did part of the walk: diffs were fetched after the kill.
    const lastDiff = gh.calls.filter((c) => /\/pulls\/\d+$/.test(c.path)).at(-1)!;
    expect(lastDiff.at).toBeGreaterThan(killedAt);
    const diffsFetched = gh.calls.filter((c) => /\/pulls\/\d+$/.test(c.path)).length;
    const replays = diffsFetched - expected.length;
    process.stdout.write(
      `backfill failover: killed ${owner.nodeId} at ${walkedAtKill}/${expected.length} diffs walked ` +
        `(${atKill} stored), ` +
        `survivor ${survivor.nodeId} finished; diff calls repeated: ${replays}\n`,
    );
    // Every PR's diff was fetched, and at most the one under way at the kill twice.
    expect(diffsFetched).toBeGreaterThanOrEqual(expected.length);
    expect(replays).toBeLessThanOrEqual(1);
  });
});
