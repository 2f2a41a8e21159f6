/**
 * Idempotency-Key on emit and node actions (INTERFACE §9.3), through two edges that share
 * one Postgres (two nodes): sequential and concurrent duplicates make one actor call and
 * answer one receipt, another body answers 409 `idempotency_key_reused`, keys are per
 * tenant, a failure that wrote nothing frees the key, and the key expires after 24 hours.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadlineExceeded, UpstreamError } from '../../src/errors.js';
import { projectEvent } from '../../src/graph/project.js';
import { withTx } from '../../src/store/db.js';
import type { Install } from '../../src/store/installs.js';
import { edgeFixture, type Asked } from '../support/edge.js';
import { until } from '../support/until.js';

type Fixture = Awaited<ReturnType<typeof edgeFixture>>;
let n1: Fixture;
let n2: Fixture;
let calls = 0;
let gate: Promise<void> = Promise.resolve();
let failNext = false;
/** Acts, then "dies" before answering: a DeadlineExceeded after `whileActing` ran. */
let dieAfter: ((msg: Asked['msg']) => Promise<void>) | null = null;
const keysSeen: unknown[] = [];

async function answer({ key, msg }: Asked) {
  calls++;
  keysSeen.push(msg.idempotencyKey);
  await gate;
  if (failNext) {
    failNext = false;
    throw new UpstreamError('upstream said no');
  }
  if (dieAfter) {
    const acted = dieAfter;
    dieAfter = null;
    await acted(msg);
    throw new DeadlineExceeded('the node running the write died');
  }
  return { provider_id: String(calls), kind: msg.kind, install_id: key.id[0], emitted_at: new Date().toISOString() };
}

beforeAll(async () => {
  n1 = await edgeFixture(answer);
  n2 = await edgeFixture(answer);
});
afterAll(async () => {
  await n1.close();
  await n2.close();
});

const emitBody = (text: string) => ({ kind: 'chatapp.message', body: { channel_id: 'C1', text } });

function emit(node: Fixture, auth: Record<string, string>, install: Install, key: string | null, payload: object) {
  return node.app.inject({
    method: 'POST',
    url: `/api/v1/connectors/installs/${install.install_id}/emit`,
    headers: key === null ? auth : { ...auth, 'idempotency-key': key },
    payload,
  });
}

describe('Idempotency-Key on emit', () => {
  it('replays the first receipt for a sequential duplicate, on another node too', async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id);
    const before = calls;
    const first = await emit(n1, t.auth, inst, 'k-seq', emitBody('hello'));
    expect(first.statusCode).toBe(200);
    const again = await emit(n1, t.auth, inst, 'k-seq', emitBody('hello'));
    const other = await emit(n2, t.auth, inst, 'k-seq', emitBody('hello'));
    expect(again.json()).toEqual(first.json());
    expect(other.json()).toEqual(first.json());
    expect(other.headers['idempotent-replayed']).toBe('true');
    expect(calls - before).toBe(1);
    // Key order inside the body does not make it another body.
    const reordered = await emit(n2, t.auth, inst, 'k-seq', {
      body: { text: 'hello', channel_id: 'C1' },
      kind: 'chatapp.message',
    });
    expect(reordered.json()).toEqual(first.json());
    // Without a key every call acts.
    await emit(n1, t.auth, inst, null, emitBody('hello'));
    await emit(n1, t.auth, inst, null, emitBody('hello'));
    expect(calls - before).toBe(3);
  });

  it('collapses concurrent duplicates on two nodes onto one call', async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id);
    const before = calls;
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    const pending = [n1, n2, n1, n2].map((n) => emit(n, t.auth, inst, 'k-conc', emitBody('once')));
    // The first call holds the claim while the others wait on it.
    await until('the first call acting', () => calls - before === 1);
    // Pacing only: the duplicates find the claim taken and poll it. One that came later would
    // replay the stored receipt, which the assertions below accept as well.
    setTimeout(open, 300);
    const answers = await Promise.all(pending);
    gate = Promise.resolve();
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    for (const r of answers) expect(r.json()).toEqual(answers[0]!.json());
    expect(calls - before).toBe(1);
  });

  it('answers 409 idempotency_key_reused for another body, target or kind; keys are per tenant', async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id);
    const inst2 = await n1.install(t.tenant_id);
    expect((await emit(n1, t.auth, inst, 'k-body', emitBody('one'))).statusCode).toBe(200);
    for (const [i, body] of [
      [inst, emitBody('two')],
      [inst2, emitBody('one')],
    ] as const) {
      const res = await emit(n2, t.auth, i, 'k-body', body);
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('idempotency_key_reused');
    }
    const u = await n1.tenant('other');
    const theirs = await n1.install(u.tenant_id);
    const before = calls;
    expect((await emit(n1, u.auth, theirs, 'k-body', emitBody('two'))).statusCode).toBe(200);
    expect(calls - before).toBe(1);
  });

  it('frees the key after a failure that wrote nothing, refuses malformed keys', async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id);
    failNext = true;
    const failed = await emit(n1, t.auth, inst, 'k-fail', emitBody('x'));
    expect(failed.statusCode).toBe(502);
    const retried = await emit(n2, t.auth, inst, 'k-fail', emitBody('x'));
    expect(retried.statusCode).toBe(200);
    for (const bad of ['', 'a'.repeat(256), 'has space', 'ünï']) {
      const res = await emit(n1, t.auth, inst, bad, emitBody('x'));
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
    expect((await emit(n1, t.auth, inst, 'a'.repeat(255), emitBody('x'))).statusCode).toBe(200);
  });

  it("passes the key to the actor; a retry after the first call's node died replays the write it recorded", async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id);
    // The write happened and its emitted record carries the key; the receipt was never stored.
    dieAfter = async () => {
      await n1.pool.query(
        `INSERT INTO emitted_events (install_id, tenant_id, kind, repo_full_name, issue_or_pr_number, provider_id,
                                     idempotency_key)
         VALUES ($1, $2, 'chatapp.message', 'C1', 0, 'P-written', 'k-died')`,
        [inst.install_id, t.tenant_id],
      );
    };
    const before = calls;
    const lost = await emit(n1, t.auth, inst, 'k-died', emitBody('x'));
    expect(lost.statusCode).toBe(503);
    expect(keysSeen.at(-1)).toBe('k-died');
    // The claim is kept (the write may have happened) until its lock passes.
    await n1.pool.query(`UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE tenant_id = $1`, [
      t.tenant_id,
    ]);
    const retry = await emit(n2, t.auth, inst, 'k-died', emitBody('x'));
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toMatchObject({
      provider_id: 'P-written',
      kind: 'chatapp.message',
      install_id: inst.install_id,
    });
    expect(calls - before).toBe(1);
    expect((await emit(n1, t.auth, inst, 'k-died', emitBody('x'))).json()).toEqual(retry.json());

    // Died before anything was recorded: the upstream write cannot be told from none, so
    // the retry writes (the gap README "Idempotent writes" names).
    dieAfter = async () => {};
    expect((await emit(n1, t.auth, inst, 'k-died-early', emitBody('x'))).statusCode).toBe(503);
    await n1.pool.query(`UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE tenant_id = $1`, [
      t.tenant_id,
    ]);
    expect((await emit(n2, t.auth, inst, 'k-died-early', emitBody('x'))).statusCode).toBe(200);
    expect(calls - before).toBe(3);
  });

  it('forgets a key after 24 hours', async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id);
    const first = await emit(n1, t.auth, inst, 'k-old', emitBody('x'));
    await n1.pool.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute' WHERE tenant_id = $1`,
      [t.tenant_id],
    );
    const before = calls;
    const later = await emit(n1, t.auth, inst, 'k-old', emitBody('another body is fine now'));
    expect(later.statusCode).toBe(200);
    expect(later.json().provider_id).not.toBe(first.json().provider_id);
    expect(calls - before).toBe(1);
  });
});

describe('Idempotency-Key on node actions', () => {
  it('replays the first receipt and refuses another action with the key', async () => {
    const t = await n1.tenant();
    const inst = await n1.install(t.tenant_id, 'chatapp', 'TIDEM');
    await withTx(n1.pool, (tx) =>
      projectEvent(tx, inst, {
        id: 'message:C1:1.1',
        kind: 'message',
        payload: { channel_id: 'C1', channel_type: 'channel', ts: '1.1', user: 'U1', text: 'hi' },
        installId: inst.install_id,
        tenantId: inst.tenant_id,
        connectorId: 'chatapp',
        occurredAt: null,
      }),
    );
    const nodes = await n1.app.inject({ url: '/api/v1/graph/nodes?kind=chat.message', headers: t.auth });
    const node = nodes.json().nodes[0];
    const act = (n: Fixture, payload: object) =>
      n.app.inject({
        method: 'POST',
        url: `/api/v1/graph/nodes/${node.id}/actions`,
        headers: { ...t.auth, 'idempotency-key': 'act-1' },
        payload,
      });
    const before = calls;
    const first = await act(n1, { action: 'react', name: 'eyes' });
    expect(first.statusCode).toBe(200);
    expect((await act(n2, { action: 'react', name: 'eyes' })).json()).toEqual(first.json());
    expect(calls - before).toBe(1);
    const other = await act(n2, { action: 'react', name: 'tada' });
    expect(other.statusCode).toBe(409);
    expect(other.json().error.code).toBe('idempotency_key_reused');
  });
});
