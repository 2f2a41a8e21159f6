/**
 * The bench's own Postgres database (created fresh, dropped at the end unless kept) with
 * a tenant and a `codehost` install per GitHub installation id, and the queries that
 * read ingest results back: how many events of a run were committed, and how long each
 * took from the moment it was sent (`occurred_at` carries the send time) to its commit
 * (`received_at`, the row's clock_timestamp()).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool } from '../../src/store/db.js';
import { claimWorkspace } from '../../src/store/chat-claims.js';
import { createInstall, setBackfill } from '../../src/store/installs.js';
import { migrate } from '../../src/store/migrate.js';
import { createTenant } from '../../src/store/tenants.js';

export interface BenchDb {
  url: string;
  pool: pg.Pool;
  drop(): Promise<void>;
}

export async function createBenchDb(adminUrl: string, keep: boolean): Promise<BenchDb> {
  const name = `connectors_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const pool = createPool(url, { max: 4 });
  await migrate(pool);
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      if (keep) return;
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * One tenant per installation id, each with one active codehost install, backfill already
 * done: the common shape in production (graph nodes are per tenant, so events of
 * different installs never wait on each other's rows).
 */
export async function seedInstalls(
  pool: pg.Pool,
  masterKey: string,
  installationIds: number[],
): Promise<Array<{ tenantId: string; apiKey: string }>> {
  const tenants: Array<{ tenantId: string; apiKey: string }> = [];
  for (const id of installationIds) {
    const tenant = await createTenant(pool, masterKey, `bench-${id}`);
    tenants.push({ tenantId: tenant.tenant_id, apiKey: tenant.api_key });
    const inst = await createInstall(pool, {
      tenantId: tenant.tenant_id,
      connectorId: 'codehost',
      externalId: String(id),
      displayName: `bench-${id}`,
    });
    // The bench measures live webhooks only; a pending backfill would call the (absent) API.
    await setBackfill(pool, inst.install_id, 'complete');
  }
  return tenants;
}

export interface CommitStats {
  committed: number;
  firstCommit: Date | null;
  lastCommit: Date | null;
  e2cP50Ms: number | null;
  e2cP99Ms: number | null;
}

/**
 * Postgres here may run with `autovacuum = off`; production has it on, and its analyze
 * keeps the planner's statistics current. Without statistics the planner may pick the
 * wrong index for the graph lookups on a fresh database, so the bench runs `ANALYZE`
 * every `everyMs` while it runs, as autovacuum's analyze would. Returns the stopper.
 */
export function analyzePeriodically(pool: pg.Pool, everyMs = 10_000): () => void {
  const timer = setInterval(() => void pool.query('ANALYZE').catch(() => undefined), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** One chat install per team (drain runs): tenant, install, backfill done, workspace claim. */
export async function seedChatInstalls(
  pool: pg.Pool,
  masterKey: string,
  teamIds: string[],
): Promise<{ installId: string; tenantId: string; teamId: string }[]> {
  const out = [];
  for (const teamId of teamIds) {
    const tenant = await createTenant(pool, masterKey, `bench-${teamId}`);
    const inst = await createInstall(pool, { tenantId: tenant.tenant_id, connectorId: 'chatapp', externalId: teamId });
    await setBackfill(pool, inst.install_id, 'complete');
    await claimWorkspace(pool, { teamId, installId: inst.install_id, tenantId: tenant.tenant_id });
    out.push({ installId: inst.install_id, tenantId: tenant.tenant_id, teamId });
  }
  return out;
}

/** Events of one run (their ids start with `prefix`). */
export async function commitStats(pool: pg.Pool, prefix: string, connector = 'codehost'): Promise<CommitStats> {
  const { rows } = await pool.query<{ n: string; first: Date | null; last: Date | null; p: number[] | null }>(
    `SELECT count(*) AS n, min(received_at) AS first, max(received_at) AS last,
            percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM received_at - occurred_at) * 1000) AS p
       FROM events WHERE connector_id = $2 AND id LIKE $1`,
    [`${prefix}%`, connector],
  );
  const r = rows[0]!;
  return {
    committed: Number(r.n),
    firstCommit: r.first,
    lastCommit: r.last,
    e2cP50Ms: r.p?.[0] ?? null,
    e2cP99Ms: r.p?.[1] ?? null,
  };
}
