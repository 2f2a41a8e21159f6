/**
 * INTERFACE §10.5: the erase of a code-host login finds the stored events that carry what the
 * login wrote below a payload's top level too: a review thread's comments
 * (`pull_request_review_thread`, stored though the graph ignores it) and a transferred
 * discussion's new copy. Recorded GitHub deliveries (@octokit/webhooks-examples), stored as
 * ingest stores them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutAuthorsText } from '../../src/graph/codehost-authored.js';
import { CODEHOST_EVENTS_OF_LOGIN, eraseUser } from '../../src/graph/erase-user.js';
import { createPool, withTx } from '../../src/store/db.js';
import { insertEvents } from '../../src/store/events.js';
import { testDatabaseUrl } from '../support/env.js';
import { examplePayload, recordedExamples } from '../support/github-harness.js';
import { graphDb } from '../support/graph-db.js';

// Recorded payloads are deeply nested JSON the tests edit in place.
const example = (name: string, action: string) => examplePayload(name, action) as Record<string, any>;

let pool: Pool;
let g: ReturnType<typeof graphDb>;
beforeAll(() => {
  pool = createPool(testDatabaseUrl(), { max: 4 });
  g = graphDb(pool);
});
afterAll(() => pool.end());

describe('erasing a code-host login reaches its text nested in stored events', () => {
  it("a review thread's comments and a transferred discussion's new copy lose the login's bodies", async () => {
    const inst = await g.freshInstall('codehost', String(200_000 + Math.floor(Math.random() * 1e6)));
    const login = `erased-${randomBytes(3).toString('hex')}`;

    const thread = example('pull_request_review_thread', 'resolved');
    thread.pull_request.user = { ...thread.pull_request.user, login: 'pr-author' };
    thread.pull_request.body = 'the pull request text stays';
    thread.thread.comments[0].user = { ...thread.thread.comments[0].user, login };
    thread.thread.comments[0].body = 'a review comment to forget';
    const moved = example('discussion', 'transferred');
    moved.discussion.user = { ...moved.discussion.user, login };
    moved.discussion.body = 'a discussion to forget';
    moved.changes.new_discussion.user = { ...moved.changes.new_discussion.user, login };
    moved.changes.new_discussion.body = 'a discussion to forget';

    const stored = [
      { id: randomUUID(), kind: 'pull_request_review_thread.resolved', payload: thread },
      { id: randomUUID(), kind: 'discussion.transferred', payload: moved },
    ];
    await insertEvents(
      pool,
      stored.map((e) => ({ ...e, connector_id: 'codehost', install_id: inst.install_id, tenant_id: inst.tenant_id })),
    );

    const erased = await withTx(pool, (tx) => eraseUser(tx, inst, login));
    expect(erased.events).toBe(2);

    const { rows } = await pool.query<{ id: string; payload: Record<string, any> }>(
      'SELECT id, payload FROM events WHERE install_id = $1',
      [inst.install_id],
    );
    const payloadOf = (id: string) => rows.find((r) => r.id === id)!.payload;
    expect(payloadOf(stored[0]!.id).thread.comments[0]).not.toHaveProperty('body');
    expect(payloadOf(stored[0]!.id).pull_request.body).toBe('the pull request text stays');
    expect(payloadOf(stored[1]!.id).discussion).not.toHaveProperty('body');
    expect(payloadOf(stored[1]!.id).changes.new_discussion).not.toHaveProperty('body');
    expect(JSON.stringify(rows)).not.toMatch(/to forget/);
  });
});

describe("the erase reads only the events that name the login (migration 099's index)", () => {
  it('every recorded GitHub delivery names each login whose text the erase would remove', async () => {
    const all = recordedExamples();
    const { rows } = await pool.query<{ logins: string[] }>(
      `SELECT codehost_payload_logins(p) AS logins FROM jsonb_array_elements($1::jsonb) AS p`,
      [JSON.stringify(all.map((a) => a.example))],
    );
    let checked = 0;
    const missed: string[] = [];
    all.forEach(({ name, example }, i) => {
      const kind = typeof example.action === 'string' ? `${name}.${example.action}` : name;
      const asked = new Set<string>();
      withoutAuthorsText(kind, example, (l) => (asked.add(l), false));
      for (const login of asked) {
        if (withoutAuthorsText(kind, example, (l) => l === login) === example) continue;
        checked++;
        if (!rows[i]!.logins.includes(login)) missed.push(`${kind}: ${login}`);
      }
    });
    expect(checked).toBeGreaterThan(50);
    expect(missed).toEqual([]);
  });

  it("the erase's search of a tenant's events can use the index", async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // A fresh test database is small: forbid the full scan to see whether the index fits at all.
      await client.query('SET LOCAL enable_seqscan = off');
      const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${CODEHOST_EVENTS_OF_LOGIN}`, [
        randomUUID(),
        'someone',
      ]);
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('events_codehost_logins');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
