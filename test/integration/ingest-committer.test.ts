/**
 * Integration: group commit across installs (ingest/commit.ts) on a real Postgres,
 * with the code-host driver's real self-emit filter and GitHub's recorded webhook payloads.
 * Installs of different tenants share one transaction and each keeps its own rows, graph,
 * changes, effects and Tier-2 verdicts; a failing install fails only itself.
 */
import { createRequire } from 'node:module';
import type { Pool, PoolClient } from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestCommitter, type IngestTransaction } from '../../src/ingest/commit.js';
import type { IngestPart, PartOutcome } from '../../src/ingest/transaction.js';
import type { DriverRegistry } from '../../src/connectors/driver.js';
import { codehostDriver } from '../../src/connectors/codehost/driver.js';
import { selfEmitVerdicts } from '../../src/connectors/chatapp/self-emit-filter.js';
import { projectBatches } from '../../src/graph/project.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { createPool } from '../../src/store/db.js';
import { recordEmitted } from '../../src/store/emitted.js';
import { insertEvents, newEventOf } from '../../src/store/events.js';
import { createInstall, setBackfill, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

const webhooks = createRequire(import.meta.url)('@octokit/webhooks-examples') as Array<{
  name: string;
  examples: Array<Record<string, any>>;
}>;
const example = (name: string, action: string): Record<string, any> =>
  structuredClone(webhooks.find((w) => w.name === name)!.examples.find((e) => e.action === action)!);

const log = pino({ level: 'silent' });
let pool: Pool;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 6 });
});
afterAll(() => pool.end());

const drivers: DriverRegistry = new Map([
  [
    'codehost',
    codehostDriver({
      clients: null,
      write: () => Promise.reject(new Error('no writes in this test')),
      summary: null,
    }),
  ],
]);

async function freshInstall(tenantId?: string, connectorId: 'codehost' | 'chatapp' = 'codehost'): Promise<Install> {
  const tid = tenantId ?? (await createTenant(pool, TEST_MASTER_KEY, 'committer')).tenant_id;
  const inst = await createInstall(pool, {
    tenantId: tid,
    connectorId,
    externalId: `${connectorId === 'chatapp' ? 'T' : ''}${Math.floor(Math.random() * 1e9)}`,
  });
  // Nothing to backfill: keeps connector nodes of other test files from walking these installs.
  await setBackfill(pool, inst.install_id, 'complete');
  return inst;
}

function committer(opts: { slots?: number; maxEvents?: number } = {}) {
  const transactions: IngestTransaction[] = [];
  const c = new IngestCommitter({
    pool,
    drivers,
    log,
    project: projectBatches,
    shardOf: () => 0,
    namespace: 'committer-test',
    slots: opts.slots ?? 2,
    ...(opts.maxEvents === undefined ? {} : { maxEvents: opts.maxEvents }),
    onTransaction: (t) => transactions.push(t),
  });
  return { c, transactions };
}

let seq = 0;
function ingestEvent(inst: Install, kind: string, payload: unknown, occurredAt: string | null = null): IngestEvent {
  return {
    installId: inst.install_id,
    tenantId: inst.tenant_id,
    connectorId: inst.connector_id,
    id: `delivery-${++seq}-${Date.now()}`,
    kind,
    occurredAt,
    payload,
  };
}

function part(inst: Install, events: IngestEvent[]): IngestPart {
  return { ctx: { install: inst, signal: new AbortController().signal, log }, events };
}

async function storedIds(inst: Install): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM events WHERE install_id = $1 ORDER BY id', [
    inst.install_id,
  ]);
  return rows.map((r) => r.id);
}

/** Until an ingest transaction's event insert waits for a row lock another session holds. */
async function untilEventInsertWaitsForLock(): Promise<void> {
  await until(
    'the first transaction waits for the row lock',
    async () => {
      const { rows } = await pool.query(
        `SELECT 1 FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE '%INSERT INTO events%'`,
      );
      return rows.length > 0;
    },
    { timeoutMs: 10_000 },
  );
}

describe('IngestCommitter', () => {
  it('installs of different tenants handed in together share one transaction and keep their own rows', async () => {
    const installs = [await freshInstall(), await freshInstall(), await freshInstall()];
    const { c, transactions } = committer();
    // The same pull request in every install: one node per tenant, each written by its own install.
    const pr = example('pull_request', 'opened');
    const parts = installs.map((inst) => part(inst, [ingestEvent(inst, 'pull_request.opened', pr)]));
    const outcomes = await Promise.all(parts.map((p) => c.commit(p)));

    expect(transactions).toEqual([expect.objectContaining({ installs: 3, events: 3 })]);
    for (const [i, inst] of installs.entries()) {
      const o = outcomes[i]!;
      expect(o.stored).toEqual([true]);
      expect(o.effects).toBe(1);
      expect(await storedIds(inst)).toEqual([parts[i]!.events[0]!.id]);
      // Every change names a node of the install's own tenant, written by the install.
      const ids = o.changes.map((ch) => ch.node_id);
      expect(ids.length).toBeGreaterThan(0);
      const { rows } = await pool.query<{ tenant_id: string; install_id: string }>(
        'SELECT DISTINCT tenant_id, install_id FROM graph_nodes WHERE node_id = ANY($1::uuid[])',
        [ids],
      );
      expect(rows).toEqual([{ tenant_id: inst.tenant_id, install_id: inst.install_id }]);
      const { rows: effects } = await pool.query('SELECT 1 FROM effects WHERE install_id = $1', [inst.install_id]);
      expect(effects).toHaveLength(1);
    }
    const { rows: prs } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM graph_nodes WHERE kind = 'codehost.pull_request' AND tenant_id = ANY($1::uuid[])`,
      [installs.map((i) => i.tenant_id)],
    );
    expect(Number(prs[0]!.n)).toBe(3);

    // Replayed together: nothing stored, projected or given effects again.
    const again = await Promise.all(parts.map((p) => c.commit(p)));
    expect(again.map((o) => [o.stored, o.changes, o.effects])).toEqual(installs.map(() => [[false], [], 0]));
  });

  it('batches of different sizes, replays among them, and two installs of one tenant writing the same node', async () => {
    const x = await freshInstall();
    const y = await freshInstall(x.tenant_id);
    const z = await freshInstall();
    const { c, transactions } = committer();
    const opened = example('issues', 'opened');
    const commented = example('issue_comment', 'created');
    // The same sender in x's and y's events: one user node of their tenant, y's write last.
    const login = `octo-${seq}`;
    opened.issue.user.login = commented.issue.user.login = commented.comment.user.login = login;
    const replayed = ingestEvent(x, 'issues.opened', opened);
    await c.commit(part(x, [replayed]));
    transactions.length = 0;

    const xs = [replayed, ingestEvent(x, 'issue_comment.created', commented), ingestEvent(x, 'issues.edited', opened)];
    const ys = [ingestEvent(y, 'issue_comment.created', commented)];
    const zs = [ingestEvent(z, 'issues.opened', opened), ingestEvent(z, 'issue_comment.created', commented)];
    const [ox, oy, oz] = await Promise.all([c.commit(part(x, xs)), c.commit(part(y, ys)), c.commit(part(z, zs))]);
    expect(transactions).toEqual([expect.objectContaining({ installs: 3, events: 6 })]);
    expect([ox.stored, oy.stored, oz.stored]).toEqual([[false, true, true], [true], [true, true]]);
    expect(await storedIds(x)).toEqual(xs.map((e) => e.id).sort());
    expect(await storedIds(z)).toEqual(zs.map((e) => e.id).sort());

    const user = await pool.query<{ node_id: string; install_id: string }>(
      `SELECT node_id, install_id FROM graph_nodes WHERE tenant_id = $1 AND kind = 'codehost.user' AND external_id = $2`,
      [x.tenant_id, login],
    );
    expect(user.rows).toHaveLength(1);
    expect(user.rows[0]!.install_id).toBe(y.install_id);
    // y's write moved the node to y: its change notice is y's.
    expect(oy.changes.map((ch) => ch.node_id)).toContain(user.rows[0]!.node_id);
    for (const [inst, o] of [
      [x, ox],
      [y, oy],
      [z, oz],
    ] as const) {
      const { rows } = await pool.query<{ tenant_id: string }>(
        'SELECT DISTINCT tenant_id FROM graph_nodes WHERE node_id = ANY($1::uuid[])',
        [o.changes.map((ch) => ch.node_id)],
      );
      expect(rows).toEqual([{ tenant_id: inst.tenant_id }]);
    }
    const zUser = await pool.query(
      `SELECT 1 FROM graph_nodes WHERE tenant_id = $1 AND kind = 'codehost.user' AND external_id = $2`,
      [z.tenant_id, login],
    );
    expect(zUser.rows).toHaveLength(1);
  });

  it('the chat Tier-2 lookup for several installs finds only the post of the install that made it', async () => {
    const [a, b] = [await freshInstall(undefined, 'chatapp'), await freshInstall(undefined, 'chatapp')];
    const ts = `1700000000.${String(seq++).padStart(6, '0')}`;
    await recordEmitted(pool, {
      installId: a.install_id,
      tenantId: a.tenant_id,
      kind: 'chatapp.message',
      repoFullName: 'C1',
      issueOrPrNumber: 0,
      providerId: ts,
    });
    const judged = [a, b].map((inst) => ({
      installId: inst.install_id,
      bot: {
        install_id: inst.install_id,
        team_id: inst.external_id,
        bot_user_id: 'UBOT',
        bot_id: 'BBOT',
        app_id: 'ABOT',
        scopes: [],
      },
      kind: 'message',
      payload: { channel_id: 'C1', ts, user: 'U1', text: 'mirrored' },
    }));
    expect(await selfEmitVerdicts(pool, judged)).toEqual(['own_post', 'keep']);
  });

  it('Tier 2 in a shared transaction drops only the echo of the install that wrote the comment', async () => {
    const [a, b] = [await freshInstall(), await freshInstall()];
    const comment = example('issue_comment', 'created');
    await recordEmitted(pool, {
      installId: a.install_id,
      tenantId: a.tenant_id,
      kind: 'codehost.issue_comment',
      repoFullName: comment.repository.full_name,
      issueOrPrNumber: comment.issue.number,
      providerId: String(comment.comment.id),
    });
    const { c, transactions } = committer();
    const [oa, ob] = await Promise.all([
      c.commit(part(a, [ingestEvent(a, 'issue_comment.created', comment)])),
      c.commit(part(b, [ingestEvent(b, 'issue_comment.created', comment)])),
    ]);
    expect(transactions.map((t) => t.installs)).toEqual([2]);
    expect(oa).toMatchObject({ stored: [false], drops: [{ tier: 2, reason: 'emitted_by_this_install' }] });
    expect(ob).toMatchObject({ stored: [true], drops: [] });
    expect(await storedIds(a)).toEqual([]);
    expect((await storedIds(b)).length).toBe(1);
  });

  it('a failing install fails only itself: the others of its transaction commit apart', async () => {
    const [a, b, c3] = [await freshInstall(), await freshInstall(), await freshInstall()];
    const { c, transactions } = committer();
    const ok = (inst: Install) => part(inst, [ingestEvent(inst, 'issues.opened', example('issues', 'opened'))]);
    // A time Postgres cannot read: the event row's insert fails, so does any transaction holding it.
    const poison = part(b, [ingestEvent(b, 'issues.opened', example('issues', 'opened'), 'not a time')]);
    const results = await Promise.allSettled([c.commit(ok(a)), c.commit(poison), c.commit(ok(c3))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<PartOutcome>).value.stored).toEqual([true]);
    expect((results[2] as PromiseFulfilledResult<PartOutcome>).value.stored).toEqual([true]);
    expect((await storedIds(a)).length).toBe(1);
    expect(await storedIds(b)).toEqual([]);
    expect((await storedIds(c3)).length).toBe(1);
    // The shared one rolled back (not counted); then one transaction per install that committed.
    expect(transactions.map((t) => t.installs)).toEqual([1, 1]);
  });

  it('does not commit a batch whose caller gave up while it waited for a slot: it fails with the reason, the rest commit', async () => {
    const [first, late, next] = [await freshInstall(), await freshInstall(), await freshInstall()];
    const { c, transactions } = committer({ slots: 1 });
    const ev = (inst: Install) => ingestEvent(inst, 'issues.opened', example('issues', 'opened'));
    const firstEvent = ev(first);
    const holder: PoolClient = await pool.connect();
    let lateOutcome: Promise<unknown>;
    let nextOutcome: Promise<PartOutcome>;
    try {
      // The one slot is held: another session inserted the first batch's event row and has not committed.
      await holder.query('BEGIN');
      await insertEvents(holder, [newEventOf(firstEvent)]);
      const firstOutcome = c.commit(part(first, [firstEvent]));
      await untilEventInsertWaitsForLock();
      // The actor's message deadline passes while its batch waits (the kernel aborts the signal).
      const deadline = new AbortController();
      lateOutcome = c
        .commit({ ctx: { install: late, signal: deadline.signal, log }, events: [ev(late)] }, { alone: true })
        .catch((err: unknown) => err);
      nextOutcome = c.commit(part(next, [ev(next)]), { alone: true });
      await new Promise((r) => setImmediate(r));
      expect(c.waiting()).toBe(2);
      deadline.abort(new Error('deadline passed while handling ingest'));
      await holder.query('ROLLBACK');
      expect((await firstOutcome).stored).toEqual([true]);
    } finally {
      holder.release();
    }
    const err = await lateOutcome;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('deadline passed while handling ingest');
    expect((await nextOutcome).stored).toEqual([true]);
    expect(await storedIds(late)).toEqual([]);
    expect((await storedIds(next)).length).toBe(1);
    // The held batch and the next one: no transaction for the one given up.
    expect(transactions.map((t) => t.installs)).toEqual([1, 1]);
  });

  it('queues what is handed in while the slots are busy for the next transaction, up to maxEvents; alone stays alone', async () => {
    const installs = await Promise.all(Array.from({ length: 5 }, () => freshInstall()));
    const [first, ...rest] = installs as [Install, ...Install[]];
    const { c, transactions } = committer({ slots: 1, maxEvents: 2 });
    const ev = (inst: Install) => ingestEvent(inst, 'issues.opened', example('issues', 'opened'));
    // Hold the first transaction: another session inserted its event row and has not committed.
    const firstEvent = ev(first);
    const holder: PoolClient = await pool.connect();
    try {
      await holder.query('BEGIN');
      await insertEvents(holder, [newEventOf(firstEvent)]);
      const done: Array<Promise<PartOutcome>> = [c.commit(part(first, [firstEvent]))];
      await untilEventInsertWaitsForLock();
      const [b, alone, d, e] = rest as [Install, Install, Install, Install];
      done.push(c.commit(part(b, [ev(b)])));
      done.push(c.commit(part(alone, [ev(alone)]), { alone: true }));
      done.push(c.commit(part(d, [ev(d)])));
      done.push(c.commit(part(e, [ev(e)])));
      await new Promise((r) => setImmediate(r));
      expect(c.waiting()).toBe(4);
      expect(c.runningTransactions()).toBe(1);
      await holder.query('ROLLBACK');
      const outcomes = await Promise.all(done);
      await until('no transaction left running', async () => c.runningTransactions() === 0);
      expect(outcomes.map((o) => o.stored)).toEqual(installs.map(() => [true]));
    } finally {
      holder.release();
    }
    // In arrival order: the held one, b alone (the next is marked alone), the alone one, then d and e.
    expect(transactions.map((t) => t.installs)).toEqual([1, 1, 1, 2]);
  });
});
