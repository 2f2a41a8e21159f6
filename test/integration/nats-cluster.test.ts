/**
 * integration: the service on an authenticated 3-node NATS cluster (INTERFACE §9.2, issue
 * 11 "an operator can run the service against an authenticated 3-replica NATS").
 *
 * Three nats-servers from deploy/nats/cluster.conf and the shipped account
 * (test/support/nats-cluster.ts), three `connectors serve` nodes with SERVICE_NATS_REPLICAS=3
 * and NATS_USER/NATS_PASSWORD. The ingest stream and every bucket have 3 replicas. The fake
 * GitHub sends signed webhooks steadily while the nats-server leading the ingest stream is
 * killed with SIGKILL: every delivery the edge acknowledged is stored exactly once, and the
 * ones refused during the election are brought in by delivery reconciliation (§9.4).
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { names as makeNames } from '../../src/runtime/names.js';
import { createPool } from '../../src/store/db.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { FakeGitHub } from '../../src/testing/github.js';
import { generateAppKeyPair } from '../../src/testing/github-jwt.js';
import type { SentDelivery } from '../../src/testing/github-hooks.js';
import { examplePayload, forInstallation } from '../support/github-harness.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';
import { assertBuilt, killAll, startServeReady, type ServeProcess } from '../support/failover-cluster.js';
import { startNatsCluster, type NatsCluster } from '../support/nats-cluster.js';

const INSTALLS = [6_300_000, 6_300_001].map((n) => n + Math.floor(Math.random() * 1000) * 2);
const RATE_PER_S = 10;

const namespace = freshNamespace('ncl');
const n = makeNames(namespace);
let cluster: NatsCluster | null = null;
let gh: FakeGitHub | null = null;
let pool: ReturnType<typeof createPool>;
let nc: NatsConnection | null = null;
const nodes: ServeProcess[] = [];

beforeAll(async () => {
  assertBuilt();
  pool = createPool(testDatabaseUrl(), { max: 4 });
  cluster = await startNatsCluster(namespace);
});

afterAll(async () => {
  await killAll();
  await nc?.close().catch(() => undefined);
  await gh?.close();
  await cluster?.dispose();
  await pool?.end();
});

it(
  'keeps every acknowledged webhook exactly once when the ingest stream leader is killed',
  { timeout: 60_000 },
  async (ctx) => {
    const c = cluster!;
    const keys = generateAppKeyPair();
    const appId = 100_000 + Math.floor(Math.random() * 800_000);
    gh = await FakeGitHub.start(appId, keys.publicKeyPem);
    const tenant = await createTenant(pool, TEST_MASTER_KEY, 'nats-cluster');
    for (const id of INSTALLS) {
      gh.addInstallation(id);
      const inst = await createInstall(pool, {
        tenantId: tenant.tenant_id,
        connectorId: 'codehost',
        externalId: String(id),
      });
      // Live webhooks only: no backfill walker.
      await setBackfill(pool, inst.install_id, 'complete');
    }
    const secret = `whsec-${Math.random().toString(36).slice(2)}`;
    const env = {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: c.natsUrl,
      NATS_USER: c.user,
      NATS_PASSWORD: c.password,
      SERVICE_NATS_REPLICAS: '3',
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: '4',
      SERVICE_LEASE_TTL_S: '3',
      SERVICE_GITHUB_RECONCILE_S: '2',
      CODEHOST_CONNECTOR_ENABLED: 'true',
      CODEHOST_APP_ID: String(appId),
      CODEHOST_APP_PRIVATE_KEY_PEM: keys.privateKeyPem,
      CODEHOST_WEBHOOK_SECRET: secret,
      CODEHOST_API_URL: gh.url,
      SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:1/{install}/{repo}',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'info',
    };
    ctx.onTestFailed(() => {
      for (const p of nodes) process.stderr.write(`--- ${p.nodeId} ---\n${p.logTail(80)}\n`);
      for (const s of c.servers) process.stderr.write(`--- ${s.name} ---\n${s.log().slice(-4_000)}\n`);
    });
    // All three at once: they race to create the stream and buckets while the cluster is young.
    nodes.push(...(await Promise.all(['ncl-a', 'ncl-b', 'ncl-c'].map((id) => startServeReady(id, env, 30_000)))));

    nc = await connect({ servers: c.natsUrl.split(','), user: c.user, pass: c.password, name: 'nats-cluster-test' });
    // Short requests: a stream without a leader does not answer, and the election is measured by polling.
    const jsm = await jetstreamManager(nc, { timeout: 1_000 });
    for (const stream of [
      n.ingestStream,
      ...[
        n.leaseBucket,
        n.nodeBucket,
        n.metaBucket,
        n.cursorBucket,
        n.dedupBucket,
        n.replayBucket,
        n.replayLongBucket,
      ].map((b) => `KV_${b}`),
    ]) {
      const info = await jsm.streams.info(stream);
      expect(info.config.num_replicas, stream).toBe(3);
      expect(info.cluster?.replicas?.length, stream).toBe(2);
    }

    // Steady signed webhooks, spread over the three edges.
    const sent: SentDelivery[] = [];
    let running = true;
    let i = 0;
    const load = (async () => {
      const inFlight = new Set<Promise<void>>();
      for (let due = performance.now(); running; due += 1000 / RATE_PER_S) {
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const k = i++;
        const node = nodes[k % nodes.length]!;
        gh!.hooks.target = { url: `${node.url}/api/v1/connectors/codehost/webhooks`, secret };
        const payload = forInstallation(examplePayload('issues', 'opened'), INSTALLS[k % INSTALLS.length]!);
        (payload.issue as { number: number }).number = 50_000 + k;
        const p = gh!.hooks.send('issues', payload).then((d) => void sent.push(d));
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      await Promise.all(inFlight);
    })();
    const acked = () => sent.filter((d) => d.status_code >= 200 && d.status_code < 300);
    await until('webhooks acknowledged before the kill', () => acked().length >= 15, { timeoutMs: 20_000 });

    const leader = await streamLeader(jsm, n.ingestStream);
    const victim = c.servers.find((s) => s.name === leader);
    expect(victim, `ingest stream leader ${leader}`).toBeDefined();
    const killedAt = Date.now();
    await victim!.kill();
    // A new leader among the two left, and webhooks acknowledged again after the election.
    const newLeader = await until(
      'a new ingest stream leader',
      async () => {
        const l = await streamLeader(jsm, n.ingestStream).catch(() => null);
        return l !== null && l !== leader ? l : null;
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
    const electedMs = Date.now() - killedAt;
    await until(
      'webhooks acknowledged after the election',
      () =>
        sent.filter(
          (d) => Date.parse(d.delivered_at) > killedAt + electedMs && d.status_code >= 200 && d.status_code < 300,
        ).length >= 10,
      { timeoutMs: 20_000 },
    );
    running = false;
    await load;
    // /readyz lists the shard leases (INTERFACE §9.3): the listing must not hang on the dead server.
    await until(
      'every node ready again',
      async () => {
        const codes = await Promise.all(
          nodes.map((p) =>
            fetch(`${p.url}/readyz`, { signal: AbortSignal.timeout(4_000) }).then(
              (r) => r.status,
              () => 0,
            ),
          ),
        );
        return codes.every((code) => code === 200);
      },
      { timeoutMs: 20_000, everyMs: 250 },
    );

    const firsts = sent.filter((d) => !d.redelivery);
    const guids = firsts.map((d) => d.guid);
    const storedCounts = async () => {
      const { rows } = await pool.query<{ id: string; n: string }>(
        'SELECT id, count(*) AS n FROM events WHERE id = ANY($1::text[]) GROUP BY id',
        [guids],
      );
      return new Map(rows.map((r) => [r.id, Number(r.n)]));
    };
    // Refused ones come back through reconciliation (every 2 s); nothing acknowledged may be missing.
    const stored = await until(
      'every delivery stored',
      async () => {
        const s = await storedCounts();
        return guids.every((g) => s.has(g)) ? s : null;
      },
      { timeoutMs: 30_000, everyMs: 250 },
    ).catch(async (err: Error) => {
      const s = await storedCounts();
      const missing = firsts
        .filter((d) => !s.has(d.guid))
        .map((d) => `${d.guid} [${gh!.hooks.byGuid(d.guid).map((x) => x.status_code)}]`);
      throw new Error(`${err.message}; missing: ${missing.join(', ')}\n${await describeIngest(jsm, n.ingestStream)}`, {
        cause: err,
      });
    });
    const ackedFirst = firsts.filter((d) => d.status_code >= 200 && d.status_code < 300);
    for (const d of ackedFirst) expect(stored.get(d.guid), d.guid).toBe(1);
    expect([...stored.values()].every((count) => count === 1)).toBe(true);
    const refused = firsts.length - ackedFirst.length;
    process.stdout.write(
      `nats-cluster: ${firsts.length} sent, ${ackedFirst.length} acknowledged first time, ${refused} refused ` +
        `and reconciled; ingest leader ${leader} killed, ${newLeader} elected in ${electedMs} ms\n`,
    );
  },
);

async function streamLeader(jsm: JetStreamManager, stream: string): Promise<string | null> {
  return (await jsm.streams.info(stream)).cluster?.leader ?? null;
}

/** For a failure report: what the ingest stream and each shard's consumer hold. */
async function describeIngest(jsm: JetStreamManager, stream: string): Promise<string> {
  const info = await jsm.streams.info(stream).catch((err: Error) => err.message);
  const lines = [
    typeof info === 'string' ? info : `stream: ${info.state.messages} messages, leader ${info.cluster?.leader}`,
  ];
  for await (const ci of jsm.consumers.list(stream)) {
    lines.push(
      `${ci.name}: pending ${ci.num_pending}, ack pending ${ci.num_ack_pending}, waiting ${ci.num_waiting}, ` +
        `delivered ${ci.delivered.stream_seq}, ack floor ${ci.ack_floor.stream_seq}, leader ${ci.cluster?.leader}`,
    );
  }
  return lines.join('\n');
}
