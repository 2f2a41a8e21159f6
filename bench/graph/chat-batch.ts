/**
 * Where Postgres spends per ingest batch, per statement (issue 12): commits batches of
 * `--batch` events of one install through the ingest transaction's own statements (the
 * chat Tier-2 self-emit lookup, events insert, graph projection, effects insert: what
 * `ingest/transaction.ts` runs) on a graph first seeded with `--seed` events, and prints
 * per statement the Postgres backend's CPU time (from /proc/<pid>/schedstat, in ns: exact
 * and far less noisy than wall time on a shared machine; Postgres must run here) and wall
 * time, per event, and this process's own CPU per event (the node's side of the same work).
 * The GIN indexes' pending lists are flushed at the end and counted as
 * their own line (autovacuum off: the inserting backends flush them).
 *
 *   npx tsx bench/graph/chat-batch.ts [--connector chatapp|codehost] [--seed 100000] [--batches 40]
 *     [--batch 256] [--db NAME (reuse a kept, seeded database)] [--keep] [--explain]
 *
 * `--explain` logs the last batch's plans with auto_explain (ANALYZE, BUFFERS, nested
 * statements: the foreign-key checks show as triggers) to this client, session only.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { fromSlackEvent } from '../../src/connectors/chatapp/normalize-event.js';
import { selfEmitVerdicts } from '../../src/connectors/chatapp/self-emit-filter.js';
import { projectEvents } from '../../src/graph/project.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { createPool, type Queryable } from '../../src/store/db.js';
import { insertEvents, newEventOf } from '../../src/store/events.js';
import { createInstall, getInstallById, type Install } from '../../src/store/installs.js';
import { migrate } from '../../src/store/migrate.js';
import { createTenant } from '../../src/store/tenants.js';
import { signedDelivery } from '../ingest/webhook-request.js';

const { values: args } = parseArgs({
  options: {
    connector: { type: 'string', default: 'chatapp' },
    seed: { type: 'string', default: '100000' },
    batches: { type: 'string', default: '40' },
    batch: { type: 'string', default: '256' },
    db: { type: 'string' },
    keep: { type: 'boolean', default: false },
    explain: { type: 'boolean', default: false },
  },
});
const BATCH = Number(args.batch);
const ADMIN_URL =
  process.env.TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const FILLER =
  'The deploy of the ingest path went out at noon; latency graphs look flat, ' +
  'queue depth stays under a hundred and nobody has been paged since. ';
const BOT = { install_id: '', team_id: '', bot_user_id: 'UBOT', bot_id: 'BBOT', app_id: 'ABOT', scopes: [] };

let counter = 0;
/** As bench/ingest/slack-request.ts: 8 channels, 64 users, ~800 characters of text. */
function chatEvent(install: Install, run: string): IngestEvent {
  const n = counter++;
  const channel = `C${run}${n % 8}`;
  const ts = `${1_700_000_000 + Math.floor(n / 1000)}.${String(n % 1000).padStart(6, '0')}`;
  const draft = fromSlackEvent({
    type: 'message',
    channel,
    channel_type: 'channel',
    user: `UBENCH${String(n % 64).padStart(4, '0')}`,
    text: `Message ${n} for <#${channel}>: ${FILLER.repeat(5)}`,
    ts,
    event_ts: ts,
  })!;
  return { ...draft, installId: install.install_id, tenantId: install.tenant_id, connectorId: 'chatapp' };
}

function codehostEvent(install: Install): IngestEvent {
  const d = signedDelivery({ secret: 's', installationId: 42, n: counter++, deliveryPrefix: 'bench-' });
  const payload = JSON.parse(d.body) as { issue: { updated_at: string } };
  return {
    id: d.headers['x-github-delivery']!,
    kind: 'issues.opened',
    occurredAt: payload.issue.updated_at,
    payload,
    installId: install.install_id,
    tenantId: install.tenant_id,
    connectorId: 'codehost',
  };
}

/** Backend CPU so far, ns (first field of schedstat: time spent on a CPU). */
async function cpuNs(pid: number): Promise<number> {
  return Number((await readFile(`/proc/${pid}/schedstat`, 'utf8')).split(' ')[0]);
}

interface Cost {
  calls: number;
  cpuNs: number;
  wallNs: number;
}
const costs = new Map<string, Cost>();

function labelOf(sql: string): string {
  const s = sql.replace(/\s+/g, ' ').trim();
  const m = /^(SELECT .*? FROM \w+|SELECT [^ ]+ [^ ]+|INSERT INTO \w+|UPDATE \w+|DELETE FROM \w+|\w+)/i.exec(s);
  return (m?.[0] ?? s).slice(0, 70);
}

/** A client whose every statement's backend CPU and wall time are added to `costs`. */
function timed(client: pg.PoolClient, pid: number): Queryable {
  const query = async (sql: string, params?: unknown[]) => {
    const c0 = await cpuNs(pid);
    const t0 = process.hrtime.bigint();
    const res = await client.query(sql, params);
    const wall = Number(process.hrtime.bigint() - t0);
    const c = costs.get(labelOf(sql)) ?? { calls: 0, cpuNs: 0, wallNs: 0 };
    c.calls++;
    c.cpuNs += (await cpuNs(pid)) - c0;
    c.wallNs += wall;
    costs.set(labelOf(sql), c);
    return res;
  };
  return { query } as unknown as Queryable;
}

/** The ingest transaction of one install (ingest/transaction.ts), minus driver plumbing: its statements, in order. */
async function commit(q: Queryable, install: Install, events: IngestEvent[]): Promise<void> {
  await q.query('BEGIN');
  if (install.connector_id === 'chatapp') {
    await selfEmitVerdicts(
      q,
      events.map((e) => ({
        installId: install.install_id,
        bot: BOT,
        kind: e.kind,
        payload: e.payload as Record<string, unknown>,
      })),
    );
  }
  const inserted = await insertEvents(q, events.map(newEventOf));
  await projectEvents(
    q,
    install,
    events.filter((_, i) => inserted[i]),
  );
  await q.query('COMMIT');
}

async function main(): Promise<void> {
  const connector = args.connector === 'codehost' ? 'codehost' : 'chatapp';
  const name = args.db ?? `connectors_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  if (args.db === undefined) await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), { max: 2 });
  const client = await pool.connect();
  const run = randomBytes(3).toString('hex').toUpperCase();
  try {
    await migrate(pool, {});
    const { rows: found } = await client.query<{ install_id: string }>(
      `SELECT install_id FROM installs WHERE connector_id = $1 ORDER BY created_at LIMIT 1`,
      [connector],
    );
    let installId = found[0]?.install_id;
    if (!installId) {
      const tenant =
        (await client.query<{ tenant_id: string }>('SELECT tenant_id FROM tenants LIMIT 1')).rows[0] ??
        (await createTenant(pool, 'bench-master-key-0123456789abcdef-0123456789', 'bench'));
      installId = (
        await createInstall(pool, { tenantId: tenant.tenant_id, connectorId: connector, externalId: `X${run}` })
      ).install_id;
    }
    const install = (await getInstallById(pool, installId))!;
    // A reused database: new issue numbers, after the ones stored (chat runs are new channels).
    counter = Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);
    const next = () => (connector === 'chatapp' ? chatEvent(install, run) : codehostEvent(install));
    const seed = args.db === undefined ? Number(args.seed) : 0;
    for (let done = 0; done < seed; done += BATCH) {
      await commit(client, install, Array.from({ length: Math.min(BATCH, seed - done) }, next));
      if (done % (BATCH * 40) === 0) process.stdout.write(`seeded ${done}\n`);
    }
    // The bench ANALYZEs every 10 s; flush what seeding left pending, so the run pays its own.
    await client.query('ANALYZE');
    await flushGin(client);
    const nodes = (await client.query<{ n: string }>('SELECT count(*) AS n FROM graph_nodes')).rows[0]!.n;
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const q = timed(client, pid);
    const batches = Number(args.batches);
    await commit(client, install, Array.from({ length: BATCH }, next)); // warm-up, not counted
    costs.clear();
    const lsn = async () =>
      (await client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0]!.lsn;
    const wal0 = await lsn();
    let clientUs = 0;
    for (let b = 0; b < batches; b++) {
      if (args.explain && b === batches - 1) await explainOn(client);
      const events = Array.from({ length: BATCH }, next);
      const u0 = process.cpuUsage();
      await commit(q, install, events);
      const u = process.cpuUsage(u0);
      clientUs += u.user + u.system;
    }
    if (args.explain) await client.query(`SET client_min_messages = notice`);
    const c0 = await cpuNs(pid);
    const t0 = process.hrtime.bigint();
    await flushGin(client);
    costs.set('gin_clean_pending_list (deferred GIN inserts)', {
      calls: 1,
      cpuNs: (await cpuNs(pid)) - c0,
      wallNs: Number(process.hrtime.bigint() - t0),
    });
    const { rows: wal } = await client.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS bytes', [
      await lsn(),
      wal0,
    ]);
    report(connector, nodes, batches * BATCH);
    // This process's side of the same batches: building parameters, the projection and
    // merge, pg's serialisation and parsing, garbage collection (plus the schedstat reads).
    process.stdout.write(`client (node) CPU: ${(clientUs / (batches * BATCH)).toFixed(1)} µs/event\n`);
    // The whole cluster's WAL: other databases' writes meanwhile count too (indicative only).
    process.stdout.write(`WAL: ${(Number(wal[0]!.bytes) / (batches * BATCH)).toFixed(0)} bytes/event (cluster-wide)\n`);
  } finally {
    client.release();
    await pool.end();
    if (args.keep || args.db !== undefined) process.stdout.write(`kept database ${name}\n`);
    else await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

async function flushGin(client: pg.PoolClient): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
     WHERE x.indrelid = 'graph_nodes'::regclass AND a.amname = 'gin'`,
  );
  for (const { name } of rows) await client.query('SELECT gin_clean_pending_list($1::regclass)', [name]);
}

async function explainOn(client: pg.PoolClient): Promise<void> {
  client.on('notice', (n) => process.stdout.write(`${n.message ?? ''}\n`));
  await client.query(`LOAD 'auto_explain'`);
  for (const s of [
    'auto_explain.log_min_duration = 0',
    'auto_explain.log_analyze = on',
    'auto_explain.log_buffers = on',
    'auto_explain.log_nested_statements = off',
    'auto_explain.log_triggers = on',
    'client_min_messages = log',
  ])
    await client.query(`SET ${s}`);
}

function report(connector: string, nodes: string, events: number): void {
  const rows = [...costs.entries()].sort((a, b) => b[1].cpuNs - a[1].cpuNs);
  const total = rows.reduce((s, [, c]) => s + c.cpuNs, 0);
  const wall = rows.reduce((s, [, c]) => s + c.wallNs, 0);
  process.stdout.write(`\n${connector}: ${events} events in batches of ${BATCH}, graph of ${nodes} nodes\n`);
  process.stdout.write(`backend CPU µs/event | wall µs/event | calls | statement\n`);
  for (const [label, c] of rows) {
    process.stdout.write(
      `${(c.cpuNs / 1000 / events).toFixed(1).padStart(8)} | ${(c.wallNs / 1000 / events).toFixed(1).padStart(8)} | ` +
        `${String(c.calls).padStart(5)} | ${label}\n`,
    );
  }
  process.stdout.write(
    `${(total / 1000 / events).toFixed(1).padStart(8)} | ${(wall / 1000 / events).toFixed(1).padStart(8)} |       | total\n`,
  );
}

await main();
