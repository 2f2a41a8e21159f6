/**
 * The chat backfill walker stops when its install is uninstalled mid-walk (spec §3.1: the
 * walker "only works while status is `active`"), whether the
 * uninstall comes through `DELETE /installs/{id}` or Slack's `app_uninstalled` event.
 *
 * No timed assertions: a second workspace walks beside the first at the same pacing, and
 * the steps it makes after the uninstall are the clock. Once it has made several, the
 * uninstalled walk must have made at most the one call that was already under way.
 */
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_BACKFILL_KIND } from '../../src/actors/chatapp/chat-backfill-protocol.js';
import { kvKey } from '../../src/runtime/kv-port.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { nextTs, type FakeChannel } from 'connector-service/testing';
import { until } from '../support/until.js';

let s: ChatStack;
beforeAll(async () => {
  // Harness pacing: conversations.history and .replies once per 60 ms per walk (1/min ÷ 1000).
  s = await startChatStack();
});
afterAll(() => s?.stop());

/** Steps of the witness walk to see after the uninstalled walk stopped. */
const WITNESS_STEPS = 6;

/** `n` top-level messages, every tenth with a two-reply thread when `threads`. */
function fill(ch: FakeChannel, n: number, threads = true): void {
  for (let i = 0; i < n; i++) {
    const ts = nextTs();
    const replies =
      threads && i % 10 === 0
        ? [0, 1].map((r) => ({ ts: nextTs(), user: 'U0R', text: `reply ${r}`, thread_ts: ts }))
        : undefined;
    ch.messages.push({ ts, user: 'U0P', text: `${ch.id} #${i}`, ...(replies ? { replies } : {}) });
  }
}

const installOf = async (tenant: Tenant, id: string) =>
  json(await fetch(`${s.node.url}/api/v1/connectors/installs/${id}`, { headers: tenant.auth }));
const storedCount = async (installId: string) =>
  Number((await s.node.pool.query('SELECT count(*) AS n FROM events WHERE install_id = $1', [installId])).rows[0].n);
const cursorOf = async (installId: string) => {
  const kv = await new Kvm(s.node.node.nc).open(makeNames(s.node.namespace).cursorBucket);
  const e = await kv.get(kvKey([CHAT_BACKFILL_KIND, installId]));
  return e !== null && e.operation === 'PUT' ? e : null;
};

/** Two workspaces walking side by side: `gone` is uninstalled mid-walk, `witness` keeps walking. */
async function twoWalks(o: { threads: boolean }) {
  const tenant = await s.node.tenant('bf-uninstall');
  const witnessTeam = s.slack.addTeam();
  const witnessCh = s.slack.addChannel(witnessTeam.id, { type: 'channel' });
  fill(witnessCh, 1500); // 100 history pages of 15: far longer than this test needs
  const team = s.slack.addTeam();
  const ch = s.slack.addChannel(team.id, { type: 'channel' });
  fill(ch, 600, o.threads); // 40 history pages (and 60 threads): 2.4 s at the least, so surely unfinished
  const total = 600 + (o.threads ? 60 * 2 : 0);
  await installOk(s, tenant, witnessTeam.id);
  const { install_id } = await installOk(s, tenant, team.id);
  // Every conversations.* call of the workspace: its one listing page was the walk's first step.
  const callsOf = (c: FakeChannel) =>
    s.slack.calls.filter((x) => x.method.startsWith('conversations.') && x.params.channel === c.id);
  await until(
    'three history pages',
    async () => callsOf(ch).filter((c) => c.method === 'conversations.history').length >= 3,
    { timeoutMs: 10_000 },
  );
  expect((await installOf(tenant, install_id)).backfill.state).toBe('running');
  expect(await until('a committed cursor', () => cursorOf(install_id), { timeoutMs: 5_000 })).not.toBeNull();
  return { tenant, team, ch, install_id, total, calls: () => callsOf(ch), witnessCalls: () => callsOf(witnessCh) };
}

/** After the uninstall answered: the walk stops, ends `failed`, stores nothing more, and its cursor is gone. */
async function expectStopped(w: Awaited<ReturnType<typeof twoWalks>>, at: { calls: number; stored: number }) {
  // Until the record leaves `running`, or the walk shows it went on (then the call count below says so).
  await until(
    'the walk to stop',
    async () =>
      w.calls().length > at.calls + 1 || (await installOf(w.tenant, w.install_id)).backfill.state !== 'running',
    { timeoutMs: 10_000 },
  );
  // Then several more steps of the witness walk, at the same pacing: time for the walk to go on, had it not stopped.
  const witnessAt = w.witnessCalls().length;
  await until('the witness walk to go on', async () => w.witnessCalls().length >= witnessAt + WITNESS_STEPS, {
    timeoutMs: 10_000,
  });

  // At most the call that was under way when the uninstall answered.
  expect(w.calls().length - at.calls).toBeLessThanOrEqual(1);
  // Nothing stored after the answer: a page still in flight is dropped by the install actor.
  expect(await storedCount(w.install_id)).toBe(at.stored);
  expect(at.stored).toBeLessThan(w.total);
  const { backfill } = await installOf(w.tenant, w.install_id);
  expect(backfill.state).toBe('failed');
  expect(backfill.messages).toBeGreaterThan(0);
  // The uninstall itself ends the record (store); the walker drops its cursor at its next step.
  await until('the cursor to be dropped', async () => (await cursorOf(w.install_id)) === null, { timeoutMs: 10_000 });
  return backfill;
}

describe('chatapp backfill: uninstalled mid-walk', () => {
  it('DELETE of the install stops the walk: no more Slack calls, nothing stored, backfill failed, cursor gone', async () => {
    const w = await twoWalks({ threads: true });
    const res = await fetch(`${s.node.url}/api/v1/connectors/installs/${w.install_id}`, {
      method: 'DELETE',
      headers: w.tenant.auth,
    });
    const at = { calls: w.calls().length, stored: await storedCount(w.install_id) };
    expect(res.status).toBe(200);
    const backfill = await expectStopped(w, at);
    // A call that raced the revoke met the dead token and failed the walk on its own; otherwise
    // the walker's next step found the install uninstalled.
    expect(['install uninstalled', 'token is dead: token_revoked']).toContain(backfill.last_error);
    expect((await installOf(w.tenant, w.install_id)).status).toBe('uninstalled');
  });

  it('DELETE while the walk waits between steps: its next step finds the install uninstalled', async () => {
    // No call can race the revoke here: the walk's only method is held off by a failed call's
    // 2 s backoff (backfill-walk.ts), so the walker's own status check must end it.
    const w = await twoWalks({ threads: false });
    w.ch.historyError = 'internal_error';
    await until('a failed history call', async () => w.calls().some((c) => c.error === 'internal_error'), {
      timeoutMs: 5_000,
    });
    delete w.ch.historyError;
    const res = await fetch(`${s.node.url}/api/v1/connectors/installs/${w.install_id}`, {
      method: 'DELETE',
      headers: w.tenant.auth,
    });
    const at = { calls: w.calls().length, stored: await storedCount(w.install_id) };
    expect(res.status).toBe(200);
    const backfill = await expectStopped(w, at);
    expect(w.calls().length).toBe(at.calls);
    expect(backfill.last_error).toBe('install uninstalled');
  });

  it('app_uninstalled stops the walk the same way (the token still works upstream)', async () => {
    const w = await twoWalks({ threads: true });
    const res = await s.slack.deliver(w.team.id, { type: 'app_uninstalled' });
    const at = { calls: w.calls().length, stored: await storedCount(w.install_id) };
    expect(res.status).toBe(200);
    expect((await installOf(w.tenant, w.install_id)).status).toBe('uninstalled');
    const backfill = await expectStopped(w, at);
    expect(backfill.last_error).toBe('install uninstalled');
  });
});
