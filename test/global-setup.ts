/**
 * Once per test run: a fresh Postgres database (migrated) and a run id for NATS namespaces,
 * so runs never collide on the machine's shared servers (DEVELOPERS: fresh database and a
 * fresh SERVICE_NAMESPACE per run). Files that start nodes or an edge work on a copy of that
 * database of their own (support/file-setup.ts), so one file's nodes never see another's installs. Tests read them with `inject()` (see test/support/env.ts).
 */
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { ensureAppRole } from '../src/store/app-role.js';
import { migrate } from '../src/store/migrate.js';
import { startContainers, type TestServices } from './support/containers.js';
import { dropDatabase, fileDatabasesOf } from './support/file-database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** The run's own pair of service logins on that database (src/store/app-role.ts): the nodes' one. */
    appDatabaseUrl: string;
    adminDatabaseUrl: string;
    natsUrl: string;
    runId: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const runId = `t${randomBytes(4).toString('hex')}`;
  const containers: TestServices | null = process.env.TEST_USE_CONTAINERS === '1' ? await startContainers() : null;
  if (containers) process.env.NATS_URL = containers.natsUrl;
  const adminUrl =
    containers?.adminDatabaseUrl ??
    process.env.TEST_ADMIN_DATABASE_URL ??
    process.env.DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/postgres';
  const dbName = `connectors_${runId}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();

  // What earlier runs left on the shared nats-server (a run killed before its teardown):
  // a run's streams outlive its database only then, and they would fill JetStream's storage.
  if (!containers) await deleteStreamsOfEndedRuns(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', adminUrl);

  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  await migrate(pool);
  await pool.end();
  // Roles are cluster-wide: named for the run, dropped with its database.
  const appRole = `connectors_${runId}`;
  const appDatabaseUrl = await ensureAppRole(databaseUrl, appRole, randomBytes(12).toString('hex'));

  project.provide('databaseUrl', databaseUrl);
  project.provide('appDatabaseUrl', appDatabaseUrl);
  project.provide('adminDatabaseUrl', adminUrl);
  project.provide('natsUrl', process.env.NATS_URL ?? 'nats://127.0.0.1:4222');
  project.provide('runId', runId);

  return async () => {
    if (containers) return containers.stop();
    if (process.env.KEEP_TEST_DB) return;
    // Every NATS namespace of the run starts with its id: what a file left behind (a stream its
    // cleanup did not know of, a file that crashed) would keep reserving JetStream storage on a
    // server that outlives the run, until it refuses new streams.
    await deleteRunStreams(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', (run) => run === runId);
    // Files that ended early (a crash, a timeout) leave their own copies behind.
    for (const name of await fileDatabasesOf(adminUrl, dbName)) await dropDatabase(adminUrl, name);
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.query(`DROP ROLE IF EXISTS ${appRole}_tenant`);
    await c.query(`DROP ROLE IF EXISTS ${appRole}`);
    await c.end();
  };
}

/** A test run's streams and KV buckets are named `[KV_]<runId>_…`, its database `connectors_<runId>`. */
const RUN_STREAM = /^(?:KV_)?(t[0-9a-f]{8})_/;

/** Deletes the streams and KV buckets of the runs `doomed` names. */
async function deleteRunStreams(natsUrl: string, doomed: (runId: string) => boolean): Promise<void> {
  const nc = await connect({ servers: natsUrl, timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    const names: string[] = [];
    for await (const s of jsm.streams.list()) {
      const run = RUN_STREAM.exec(s.config.name)?.[1];
      if (run && doomed(run)) names.push(s.config.name);
    }
    for (const name of names) await jsm.streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}

/** Runs whose database is gone ended (killed before their teardown): their streams go. */
async function deleteStreamsOfEndedRuns(natsUrl: string, adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const live = new Set(
    (
      await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'connectors_t%'`)
    ).rows.map((r) => r.datname),
  );
  await admin.end();
  await deleteRunStreams(natsUrl, (run) => !live.has(`connectors_${run}`));
}
