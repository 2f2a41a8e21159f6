/**
 * A private 3-node NATS cluster made from the shipped files: deploy/nats/cluster.conf as
 * it is (each server's values from its environment, as deploy/README.md says) and
 * deploy/nats/connectors-account.conf with the test's namespace in place of `svc`. Spare
 * ports, store dirs under one temp dir; the machine's shared server is never touched.
 * Servers still running when this process exits are killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { againIfPortTaken, freePort } from '../../src/dev/free-port.js';
import { until } from './until.js';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';
const DEPLOY = new URL('../../deploy/nats/', import.meta.url);

interface ClusterServer {
  name: string;
  url: string;
  httpUrl: string;
  /** SIGKILL: no shutdown, no flush. */
  kill(): Promise<void>;
  log(): string;
}

export interface NatsCluster {
  servers: ClusterServer[];
  /** NATS_URL for the service: the three client URLs, comma-separated. */
  natsUrl: string;
  user: string;
  password: string;
  /** Kill every server and remove the temp dir. */
  dispose(): Promise<void>;
}

const live = new Set<ChildProcess>();
let hooked = false;

export async function startNatsCluster(namespace: string): Promise<NatsCluster> {
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const p of live) if (p.exitCode === null) p.kill('SIGKILL');
    });
  }
  // A server whose spare port another process bound first exits; the attempt fails with its log.
  return againIfPortTaken(() => startOnce(namespace));
}

async function startOnce(namespace: string): Promise<NatsCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'nats-cluster-'));
  await copyFile(new URL('cluster.conf', DEPLOY), join(dir, 'cluster.conf'));
  const account = (await readFile(new URL('connectors-account.conf', DEPLOY), 'utf8'))
    .replace(/"svc\.>"/g, `"${namespace}.>"`)
    .replace(/svc_/g, `${namespace}_`);
  await writeFile(join(dir, 'connectors-account.conf'), account);
  // Letter first: nats-server would read an unquoted all-digit `$VAR` as a number (cluster.conf).
  const password = `c${randomBytes(16).toString('hex')}`;
  const routePassword = `c${randomBytes(16).toString('hex')}`;
  const ports = [];
  for (let i = 0; i < 3; i++) ports.push({ client: await freePort(), http: await freePort(), route: await freePort() });
  const routes = ports.map((p) => `nats://route:${routePassword}@127.0.0.1:${p.route}`);
  const procs: ChildProcess[] = [];
  /** Each server's stderr fully read (a server that exits at start says why there). */
  const closed: Promise<unknown>[] = [];
  const servers = ports.map((p, i): ClusterServer => {
    const name = `nats-${i + 1}`;
    const proc = spawn(NATS_SERVER, ['-c', join(dir, 'cluster.conf')], {
      env: {
        PATH: process.env.PATH,
        NATS_SERVER_NAME: name,
        NATS_LISTEN: `127.0.0.1:${p.client}`,
        NATS_HTTP: `127.0.0.1:${p.http}`,
        NATS_CLUSTER_LISTEN: `127.0.0.1:${p.route}`,
        NATS_STORE_DIR: join(dir, name),
        NATS_ROUTE_PASSWORD: routePassword,
        NATS_ROUTES: `[${routes.join(', ')}]`,
        CONNECTORS_NATS_PASSWORD: password,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    procs.push(proc);
    closed.push(new Promise((r) => proc.once('close', r)));
    let log = '';
    proc.stderr!.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-20_000)));
    return {
      name,
      url: `nats://127.0.0.1:${p.client}`,
      httpUrl: `http://127.0.0.1:${p.http}`,
      async kill() {
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        const gone = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGKILL');
        await gone;
      },
      log: () => log,
    };
  });
  const cluster: NatsCluster = {
    servers,
    natsUrl: servers.map((s) => s.url).join(','),
    user: 'connectors',
    password,
    async dispose() {
      await Promise.all(servers.map((s) => s.kill()));
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    // Ready when every server sees the same JetStream meta leader among three peers.
    await until(
      'the 3 NATS servers agree on a JetStream meta leader',
      async () => {
        const gone = procs.findIndex((p) => p.exitCode !== null || p.signalCode !== null);
        if (gone >= 0) throw new Error(`${servers[gone]!.name} exited while the cluster started`);
        const metas = await Promise.all(servers.map((s) => jsz(s.httpUrl)));
        const leaders = new Set(metas.map((m) => m?.meta_cluster?.leader ?? ''));
        return leaders.size === 1 && !leaders.has('') && metas.every((m) => m?.meta_cluster?.cluster_size === 3);
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
  } catch (err) {
    const exited = closed.filter((_, i) => procs[i]!.exitCode !== null || procs[i]!.signalCode !== null);
    await Promise.race([Promise.all(exited), new Promise((r) => setTimeout(r, 1_000))]);
    const logs = servers.map((s) => `--- ${s.name} ---\n${s.log().slice(-3_000)}`).join('\n');
    await cluster.dispose();
    throw new Error(`${(err as Error).message}\n${logs}`, { cause: err });
  }
  return cluster;
}

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

async function jsz(httpUrl: string): Promise<Jsz | null> {
  return fetch(`${httpUrl}/jsz`, { signal: AbortSignal.timeout(1_000) }).then(
    (r) => (r.ok ? (r.json() as Promise<Jsz>) : null),
    () => null,
  );
}
