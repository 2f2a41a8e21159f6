/**
 * Cost of the tenant fence per request (issue 32 item 5, migration 030): a tenant route's
 * query runs as the tenant login in a transaction that first binds the caller's tenant
 * (`app_bind_tenant`: an HMAC checked and one made), and every fenced table it reads checks
 * that binding once per statement (`app_bound_tenant()`, an initplan). Before 030 the
 * binding was `set_config('app.tenant_id')` and the policy compared a setting.
 *
 * Prints, per operation, µs of wall time and of the tenant backend's CPU (from /proc:
 * Postgres must run on this machine), medians of `--runs`:
 *   - bind: BEGIN, the binding statement, COMMIT (no query);
 *   - list: one tenant request through the tenant-scoped pool, the graph listing's first page
 *     (50 of 2 000 nodes of the tenant, 20 000 in all);
 *   - list, nodes' login: the same statement as the nodes' login, which no fence narrows.
 * `--upto 018` migrates only up to 018 (the fence before 030) to compare the two.
 *
 *   npx tsx bench/tenant-fence/run.ts [--ops 2000] [--runs 5] [--upto NNN]
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ensureAppRole } from '../../src/store/app-role.js';
import { createPool } from '../../src/store/db.js';
import { createInstall } from '../../src/store/installs.js';
import { listMigrations, migrate, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { tenantRoleUrl } from '../../src/store/tenant-role.js';
import {
  readTenantFenceKey,
  runInTenantScope,
  tenantBindProof,
  tenantScopedPool,
} from '../../src/store/tenant-scope.js';
import { createTenant } from '../../src/store/tenants.js';

const { values: args } = parseArgs({
  options: {
    ops: { type: 'string', default: '2000' },
    runs: { type: 'string', default: '5' },
    upto: { type: 'string' },
  },
});
const OPS = Number(args.ops);
const RUNS = Number(args.runs);
const ADMIN_URL =
  process.env.TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LIST = 'SELECT node_id, kind, external_id FROM graph_nodes WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 50';

async function migrationsDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  if (args.upto === undefined) return { dir: MIGRATIONS_DIR, cleanup: async () => undefined };
  const dir = await mkdtemp(join(tmpdir(), 'bench-migrations-'));
  for (const m of await listMigrations(MIGRATIONS_DIR)) {
    if (m.name.slice(0, 3) <= args.upto) await copyFile(m.path, join(dir, `${m.name}.sql`));
  }
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Cost {
  wallUs: number;
  cpuUs: number;
}

/** `pid`: read before each run, as an idle pool may have replaced its connection meanwhile. */
async function measure(pidOf: () => Promise<number>, op: () => Promise<unknown>): Promise<Cost> {
  const pid = await pidOf();
  const cpu0 = await cpuSeconds(pid);
  const start = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) await op();
  const wallUs = Number(process.hrtime.bigint() - start) / 1000 / OPS;
  return { wallUs, cpuUs: (((await cpuSeconds(pid)) - cpu0) * 1e6) / OPS };
}

async function main(): Promise<void> {
  const name = `connectors_bench_${randomBytes(4).toString('hex')}`;
  const role = `connectors_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const owner = createPool(url.toString(), { max: 2 });
  const migrations = await migrationsDir();
  const pools: pg.Pool[] = [];
  try {
    const { applied } = await migrate(owner, { dir: migrations.dir });
    const appUrl = await ensureAppRole(url.toString(), role, randomBytes(12).toString('hex'));
    let tenantId = '';
    for (let t = 0; t < 10; t++) {
      const tenant = await createTenant(owner, 'bench-master-key-0123456789abcdef-0123456789', `bench-${t}`);
      const inst = await createInstall(owner, {
        tenantId: tenant.tenant_id,
        connectorId: 'chatapp',
        externalId: `T${t}`,
      });
      await owner.query(
        `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id)
         SELECT $1, 'chat.message', 'C1:' || i, 'chatapp', $2 FROM generate_series(1, 2000) AS i`,
        [tenant.tenant_id, inst.install_id],
      );
      tenantId = tenant.tenant_id;
    }
    await owner.query('ANALYZE');
    const fenced = (await owner.query(`SELECT to_regclass('tenant_fence_key') IS NOT NULL AS ok`)).rows[0].ok;
    const key = fenced ? await readTenantFenceKey(owner) : null;

    // One connection per pool, so one backend does (and is charged for) each pool's work.
    const tenantRaw = createPool(tenantRoleUrl(appUrl), { max: 1 });
    const system = createPool(appUrl, { max: 1 });
    pools.push(tenantRaw, system);
    const pidOf = async (p: pg.Pool) => (await p.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const tenantPid = () => pidOf(tenantRaw);
    const systemPid = () => pidOf(system);
    const bindOnce = async () => {
      const c = await tenantRaw.connect();
      try {
        await c.query('BEGIN');
        if (key) await c.query('SELECT app_bind_tenant($1, $2)', [tenantId, tenantBindProof(key, tenantId)]);
        else await c.query(`SELECT set_config('app.tenant_id', $1, true)`, [tenantId]);
        await c.query('COMMIT');
      } finally {
        c.release();
      }
    };
    // Before 030 the scoped pool set the setting; the pool below does as the code of each schema did.
    const scoped = key ? tenantScopedPool(createPool(tenantRoleUrl(appUrl), { max: 1 }), key) : null;
    if (scoped) pools.push(scoped);
    const listScoped = scoped
      ? () => runInTenantScope(tenantId, () => scoped.query(LIST, [tenantId]))
      : async () => {
          const c = await tenantRaw.connect();
          try {
            await c.query('BEGIN');
            await c.query(`SELECT set_config('app.tenant_id', $1, true)`, [tenantId]);
            await c.query(LIST, [tenantId]);
            await c.query('COMMIT');
          } finally {
            c.release();
          }
        };
    const scopedPid = scoped ? () => runInTenantScope(tenantId, () => pidOf(scoped)) : tenantPid;
    const ops: Array<[string, () => Promise<number>, () => Promise<unknown>]> = [
      [key ? 'bind (app_bind_tenant)' : "bind (set_config('app.tenant_id'))", tenantPid, bindOnce],
      ['list, tenant route', scopedPid, listScoped],
      ['list, nodes login (no fence)', systemPid, () => system.query(LIST, [tenantId])],
    ];
    process.stdout.write(`schema up to ${applied.at(-1)}; ${OPS} operations x ${RUNS} runs\n`);
    for (const [label, pid, op] of ops) {
      await measure(pid, op); // warm-up
      const runs: Cost[] = [];
      for (let r = 0; r < RUNS; r++) runs.push(await measure(pid, op));
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
      process.stdout.write(
        `${label}: wall ${median(runs.map((r) => r.wallUs))} µs, backend CPU ${median(runs.map((r) => r.cpuUs))} µs\n`,
      );
    }
  } finally {
    for (const p of pools) await p.end();
    await owner.end();
    await migrations.cleanup();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${role}_tenant`);
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  }
}

await main();
