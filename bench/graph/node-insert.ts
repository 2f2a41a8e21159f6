/**
 * Cost of writing a graph node row (issue 12): inserts `--rows` new nodes of ~2.4 KB of
 * English search text through the projection's own statement (src/graph/graph-rows.ts,
 * `--batch` nodes per transaction, as group commit does) and prints, per run and as the
 * median, µs per row of wall time and of the Postgres backend's CPU (user + system, from
 * /proc: Postgres must run on this machine; far less noisy than wall time on a shared
 * machine). A run ends with the GIN indexes' pending lists flushed, so deferred index work
 * is counted too. `--upto 015` migrates only up to that migration
 * (the schema before a later one) to compare the two.
 *
 *   npx tsx bench/graph/node-insert.ts [--rows 5000] [--batch 50] [--runs 5] [--upto NNN] [--keep]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { insertNodes, type NodeRowWrite, type Owner } from '../../src/graph/graph-rows.js';
import { createPool, withTx } from '../../src/store/db.js';
import { createInstall } from '../../src/store/installs.js';
import { listMigrations, migrate, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { createTenant } from '../../src/store/tenants.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '5000' },
    batch: { type: 'string', default: '50' },
    runs: { type: 'string', default: '5' },
    upto: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const ROWS = Number(args.rows);
const BATCH = Number(args.batch);
const RUNS = Number(args.runs);
const ADMIN_URL =
  process.env.TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const WORDS = (
  'the deploy release build failed passed review merge branch commit fix bug issue test cache query index ' +
  'server client request response timeout retry error warning latency throughput memory disk network ' +
  'config setting rollback migration schema table column database replica primary shard lease lock ' +
  'we should probably look at this again tomorrow after standup because the numbers moved since friday ' +
  'customer reported that search results were missing older messages from the archive channel'
).split(' ');

/** ~2.4 KB of English-like text, different per row (real messages share few long runs). */
function englishText(): string {
  const bytes = randomBytes(600);
  const out: string[] = [];
  let len = 0;
  for (let i = 0; len < 2400; i++) {
    const w = WORDS[bytes[i % bytes.length]! % WORDS.length]!;
    out.push(w);
    len += w.length + 1;
  }
  return out.join(' ');
}

function nodeRow(owner: Owner): NodeRowWrite {
  const text = englishText();
  const id = randomUUID();
  return {
    nodeId: id,
    ...owner,
    kind: 'chat.message',
    externalId: `T1:C1:${id}`,
    props: { text, channel_id: 'C1', user_id: 'U1' },
    versions: { text: '1700000000.000100', channel_id: '1700000000.000100', user_id: '1700000000.000100' },
    searchText: `${text}\nU1\nC1`,
    touched: true,
  };
}

async function migrationsDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  if (args.upto === undefined) return { dir: MIGRATIONS_DIR, cleanup: async () => undefined };
  const dir = await mkdtemp(join(tmpdir(), 'bench-migrations-'));
  for (const m of await listMigrations(MIGRATIONS_DIR)) {
    if (m.name.slice(0, 3) <= args.upto) await copyFile(m.path, join(dir, `${m.name}.sql`));
  }
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** CPU seconds (user + system) of a process so far; fields 14 and 15 of /proc/<pid>/stat, in ticks. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface RunCost {
  wallUs: number;
  cpuUs: number;
}

async function insertRun(pool: pg.Pool, backendPid: number, owner: Owner, n: number): Promise<RunCost> {
  const rows = Array.from({ length: n }, () => nodeRow(owner));
  const cpu0 = await cpuSeconds(backendPid);
  const start = process.hrtime.bigint();
  for (let i = 0; i < rows.length; i += BATCH) {
    await withTx(pool, (tx) => insertNodes(tx, rows.slice(i, i + BATCH)));
  }
  const { rows: gin } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
     WHERE x.indrelid = 'graph_nodes'::regclass AND a.amname = 'gin'`,
  );
  for (const { name } of gin) await pool.query('SELECT gin_clean_pending_list($1::regclass)', [name]);
  const wallUs = Number(process.hrtime.bigint() - start) / 1000 / n;
  return { wallUs, cpuUs: (((await cpuSeconds(backendPid)) - cpu0) * 1e6) / n };
}

async function main(): Promise<void> {
  const name = `connectors_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  // One connection, so one backend process does (and is charged for) all the work.
  const pool = createPool(url.toString(), { max: 1 });
  const migrations = await migrationsDir();
  try {
    const { applied } = await migrate(pool, { dir: migrations.dir });
    const tenant = await createTenant(pool, 'bench-master-key-0123456789abcdef-0123456789', 'bench');
    const inst = await createInstall(pool, { tenantId: tenant.tenant_id, connectorId: 'chatapp', externalId: 'T1' });
    const owner: Owner = { tenantId: tenant.tenant_id, installId: inst.install_id, connectorId: 'chatapp' };
    const { rows: idx } = await pool.query<{ name: string }>(
      `SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'graph_nodes'::regclass ORDER BY 1`,
    );
    process.stdout.write(`schema up to ${applied.at(-1)}; graph_nodes indexes: ${idx.map((r) => r.name).join(', ')}\n`);
    const backendPid = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await insertRun(pool, backendPid, owner, Math.min(ROWS, 1000)); // warm-up, not counted
    const runs: RunCost[] = [];
    for (let r = 0; r < RUNS; r++) {
      const run = await insertRun(pool, backendPid, owner, ROWS);
      runs.push(run);
      process.stdout.write(
        `run ${r + 1}: wall ${run.wallUs.toFixed(1)} µs/row, backend CPU ${run.cpuUs.toFixed(1)} µs/row\n`,
      );
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
    process.stdout.write(
      `median: wall ${median(runs.map((r) => r.wallUs))} µs/row, backend CPU ${median(runs.map((r) => r.cpuUs))} µs/row ` +
        `(${ROWS} rows x ${RUNS} runs, ${BATCH} per transaction)\n`,
    );
  } finally {
    await pool.end();
    await migrations.cleanup();
    if (args.keep) process.stdout.write(`kept database ${name}\n`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
