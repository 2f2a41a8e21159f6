/**
 * The system under chaos, all on loopback: its own nats-server (spare port, own store dir),
 * a fresh Postgres database reached through a stalling TCP proxy, the fake GitHub (which
 * delivers the webhooks and keeps its delivery log), a balancer, and three `connectors
 * serve` processes. Every piece can be killed, stalled or restarted.
 */
import { startNatsChild, type NatsChild } from '../../test/support/nats-restart-server.js';
import { FakeGitHub } from '../../src/testing/github.js';
import { generateAppKeyPair } from '../../src/testing/github-jwt.js';
import { createTenant } from '../../src/store/tenants.js';
import { createUser } from '../../src/store/users.js';
import { createBenchDb, type BenchDb } from '../ingest/bench-db.js';
import { shardsOwned, startNode, stop, waitFor, type Child } from '../ingest/processes.js';
import { startBalancer, type Balancer } from './balancer.js';
import { startStallingProxy, type StallingProxy } from './tcp-proxy.js';

export const SHARDS = 16;
const MASTER_KEY = 'chaos-master-key-0123456789abcdef-0123456789';
const ADMIN_TOKEN = 'chaos-admin-token';

export interface Cluster {
  nats: NatsChild;
  db: BenchDb;
  proxy: StallingProxy;
  gh: FakeGitHub;
  balancer: Balancer;
  nodes: Array<Child | null>;
  installationIds: number[];
  /** SIGKILL node i; resolves once it is gone. */
  kill(i: number): Promise<void>;
  /** SIGTERM node i (drains, releases its leases). */
  stopNode(i: number): Promise<void>;
  start(i: number): Promise<void>;
  /** Shards owned by the live nodes together (null when a node cannot be read). */
  ownedTotal(): Promise<number | null>;
  close(): Promise<void>;
}

export async function startCluster(o: { adminUrl: string; installs: number; reconcileS: number }): Promise<Cluster> {
  const nats = await startNatsChild();
  const db = await createBenchDb(o.adminUrl, false);
  const installationIds = Array.from({ length: o.installs }, (_, i) => 7_000_000 + i);
  const pg = new URL(db.url);
  const proxy = await startStallingProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
  pg.host = `127.0.0.1:${proxy.port}`;
  const keys = generateAppKeyPair();
  const appId = 100_000 + Math.floor(Math.random() * 800_000);
  const gh = await FakeGitHub.start(appId, keys.publicKeyPem);
  for (const id of installationIds) gh.addInstallation(id);
  const secret = `chaos-${Math.random().toString(36).slice(2)}`;
  const env = {
    DATABASE_URL: pg.toString(),
    NATS_URL: nats.url,
    SERVICE_NAMESPACE: 'chaos',
    SERVICE_MASTER_KEY: MASTER_KEY,
    SERVICE_SHARDS: String(SHARDS),
    SERVICE_LEASE_TTL_S: '3',
    SERVICE_GITHUB_RECONCILE_S: String(o.reconcileS),
    CODEHOST_CONNECTOR_ENABLED: 'true',
    CODEHOST_APP_ID: String(appId),
    CODEHOST_APP_PRIVATE_KEY_PEM: keys.privateKeyPem,
    CODEHOST_WEBHOOK_SECRET: secret,
    CODEHOST_API_URL: gh.url,
    SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://127.0.0.1:1/{install}/{repo}',
    SERVICE_ADMIN_ENDPOINTS: '1',
    SERVICE_ADMIN_API_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
  };
  const nodes: Array<Child | null> = [null, null, null];
  const balancer = await startBalancer(() => nodes.flatMap((n) => (n && n.proc.exitCode === null ? [n.url] : [])));
  gh.hooks.target = { url: `${balancer.url}/api/v1/connectors/codehost/webhooks`, secret };

  const start = async (i: number) => {
    const n = await startNode(`chaos-${i}`, env);
    await waitFor(n, '/healthz', 30_000);
    nodes[i] = n;
  };
  const cluster: Cluster = {
    nats,
    db,
    proxy,
    gh,
    balancer,
    nodes,
    installationIds,
    async kill(i) {
      const n = nodes[i];
      nodes[i] = null;
      if (!n || n.proc.exitCode !== null) return;
      const gone = new Promise((r) => n.proc.once('exit', r));
      n.proc.kill('SIGKILL');
      await gone;
    },
    async stopNode(i) {
      const n = nodes[i];
      nodes[i] = null;
      if (n) await stop(n);
    },
    start,
    async ownedTotal() {
      let total = 0;
      for (const n of nodes) {
        if (!n) continue;
        const owned = await shardsOwned(n);
        if (owned === null) return null;
        total += owned;
      }
      return total;
    },
    async close() {
      for (let i = 0; i < nodes.length; i++) await cluster.stopNode(i).catch(() => undefined);
      await balancer.close();
      await gh.close();
      await proxy.close();
      await db.drop();
      await nats.dispose();
    },
  };
  for (let i = 0; i < 3; i++) await start(i);
  await waitFor(nodes[0]!, '/readyz', 60_000);
  // Installed as a tenant does (credentials, backfill), so write-backs reach the fake GitHub.
  for (const id of installationIds) {
    const t = await createTenant(db.pool, MASTER_KEY, `chaos-${id}`);
    const u = await createUser(db.pool, t.tenant_id, `ops-${id}@chaos.test`);
    const res = await fetch(`${nodes[0]!.url}/api/v1/connectors/codehost/admin/install`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${t.api_key}`,
        'x-service-admin-token': ADMIN_TOKEN,
      },
      body: JSON.stringify({
        user_id: u.user_id,
        github_installation_id: id,
        account_type: 'Organization',
        account_login: `org-${id}`,
        repository_selection: 'all',
      }),
    });
    if (res.status !== 201) throw new Error(`admin install of ${id} answered ${res.status}: ${await res.text()}`);
  }
  return cluster;
}
