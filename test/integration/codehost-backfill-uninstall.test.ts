/**
 * The code-host PR-diff backfill walker stops when its install is uninstalled mid-walk
 * (spec §3.1: the walker works only while the install is `active`), whether through an
 * `installation` `deleted` webhook or `DELETE /installs/{id}`.
 *
 * No timed assertions: a second installation walks beside the first, slowed the same way
 * by the fake GitHub, and the calls it makes after the uninstalled walk stopped are the
 * clock. Once it has made several, the uninstalled walk must have made at most the one
 * request that was already under way when the uninstall answered.
 */
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillCursorKey } from '../../src/actors/codehost/codehost-backfill-protocol.js';
import { names as makeNames } from '../../src/runtime/names.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { seedRepos, FakeIndexerDaemon } from 'connector-service/testing';
import { until } from '../support/until.js';

let h: CodehostHarness;
let daemon: FakeIndexerDaemon;
let nextInstallation = 8_700_000 + Math.floor(Math.random() * 100_000) * 4;

beforeAll(async () => {
  daemon = await FakeIndexerDaemon.start();
  h = await startCodehostHarness({ SERVICE_INDEXER_DAEMON_URL_TEMPLATE: daemon.template });
  // A large budget, so the rate gate never holds a walk; each backfill call takes 30 ms instead.
  h.gh.pulls.rate = { limit: 100_000, remaining: 99_000, resetS: Math.floor(Date.now() / 1000) + 3600 };
  h.gh.pulls.delayMs = 30;
});
afterAll(async () => {
  await h?.stop();
  await daemon?.close();
});

/** Steps of the witness walk to see after the uninstalled walk stopped. */
const WITNESS_STEPS = 6;

type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;

const recordOf = async (t: Tenant, id: string) =>
  (await (await h.api(`/api/v1/connectors/installs/${id}`, t)).json()) as {
    status: string;
    backfill: Record<string, unknown>;
  };
const storedDiffs = async (installId: string) =>
  Number(
    (
      await h.node.pool.query(
        `SELECT count(*) AS n FROM events WHERE install_id = $1 AND kind = 'pull_request.backfill_diff'`,
        [installId],
      )
    ).rows[0].n,
  );
const cursorOf = async (installId: string) => {
  const kv = await new Kvm(h.node.node.nc).open(makeNames(h.node.namespace).cursorBucket);
  const e = await kv.get(backfillCursorKey(installId));
  return e !== null && e.operation === 'PUT' ? e : null;
};
/** The backfill's `/repos/{owner}/{repo}/pulls...` calls for one installation's account. */
const pullsCalls = (login: string) =>
  h.gh.calls.filter((c) => c.path.startsWith(`/repos/${login}/`) && /\/pulls(\/\d+)?$/.test(c.path));

/** Two installations walking side by side: `installationId` is uninstalled mid-walk, the witness keeps walking. */
async function twoWalks() {
  const t = await h.tenant('bf-uninstall');
  const witness = nextInstallation++;
  const installationId = nextInstallation++;
  const witnessLogin = `witness-${witness}`;
  const login = `gone-${installationId}`;
  h.gh.addInstallation(witness, witnessLogin);
  h.gh.addInstallation(installationId, login);
  seedRepos(h.gh.pulls, witness, witnessLogin, [400]); // far longer than this test needs
  seedRepos(h.gh.pulls, installationId, login, [40, 40, 40]); // ~125 calls of 30 ms: surely unfinished
  const total = 120;
  await h.install(t, witness);
  const installId = await h.install(t, installationId);
  await until(
    'ten diffs fetched',
    async () => pullsCalls(login).filter((c) => /\/pulls\/\d+$/.test(c.path)).length >= 10,
    { timeoutMs: 20_000 },
  );
  expect((await recordOf(t, installId)).backfill.state).toBe('running');
  expect(await until('a committed cursor', () => cursorOf(installId))).not.toBeNull();
  return {
    t,
    installationId,
    installId,
    total,
    calls: () => pullsCalls(login),
    witnessCalls: () => pullsCalls(witnessLogin),
  };
}

/** After the uninstall answered: the walk stops, ends `failed`, stores no more diffs, and its cursor is gone. */
async function expectStopped(w: Awaited<ReturnType<typeof twoWalks>>, at: { calls: number; stored: number }) {
  // Until the record leaves `running`, or the walk shows it went on (then the calls below say so).
  await until(
    'the walk to stop',
    async () => w.calls().length > at.calls + 3 || (await recordOf(w.t, w.installId)).backfill.state !== 'running',
    { timeoutMs: 15_000 },
  );
  // Then several more steps of the witness walk, slowed the same way: time to go on, had it not stopped.
  const witnessAt = w.witnessCalls().length;
  await until('the witness walk to go on', async () => w.witnessCalls().length >= witnessAt + WITNESS_STEPS, {
    timeoutMs: 15_000,
  });

  // At most the request that was under way when the uninstall answered. The DELETE revokes the
  // token, and @octokit/auth-app resends a request answered 401 while its token is under 5 s old
  // (github-client.ts, GitHub's token replication delay): such resends are that same request.
  const after = w.calls().slice(at.calls);
  expect(new Set(after.map((c) => `${c.method} ${c.path} ${JSON.stringify(c.query)}`)).size).toBeLessThanOrEqual(1);
  // No diff stored after the answer: one still in flight is dropped by the install actor.
  expect(await storedDiffs(w.installId)).toBe(at.stored);
  expect(at.stored).toBeLessThan(w.total);
  const record = await recordOf(w.t, w.installId);
  expect(record.status).toBe('uninstalled');
  expect(record.backfill).toMatchObject({ state: 'failed', reason: 'install uninstalled' });
  expect(record.backfill.prs_done).toBeGreaterThan(0);
  // The uninstall itself ends the record (store); the walker drops its cursor at its next step.
  await until('the cursor to be dropped', async () => (await cursorOf(w.installId)) === null);
}

describe('codehost backfill: uninstalled mid-walk', () => {
  it(
    'an installation deleted webhook stops the walk: no more pulls calls, no diff stored, backfill failed, cursor gone',
    { timeout: 60_000 },
    async () => {
      const w = await twoWalks();
      const res = await h.deliver(
        'installation',
        forInstallation(examplePayload('installation', 'deleted'), w.installationId),
      );
      const at = { calls: w.calls().length, stored: await storedDiffs(w.installId) };
      expect(res.status).toBe(202);
      await expectStopped(w, at);
    },
  );

  it('DELETE of the install stops the walk the same way', { timeout: 60_000 }, async () => {
    const w = await twoWalks();
    // A token under 5 s old is resent on 401 (github-client.ts); past that its first 401 is final.
    await until('the walk token past its resend window', () =>
      [...h.gh.tokens.values()].some((t) => t.installationId === w.installationId && Date.now() - t.createdAt > 6_000),
    );
    // The DELETE revokes the token upstream before it commits the uninstall. Hold GitHub's
    // answer to that revoke until the walk's record leaves `running` (bounded): the walk's
    // call fails 401 while the install is still active here, and its failure must still
    // end the walk as uninstalled.
    h.gh.holdRevokeAnswer = () =>
      until(
        'the walk to record its failed step',
        async () => (await recordOf(w.t, w.installId)).backfill.state !== 'running',
        { timeoutMs: 4_000 },
      ).then(
        () => undefined,
        () => undefined,
      );
    try {
      const res = await h.api(`/api/v1/connectors/installs/${w.installId}`, w.t, { method: 'DELETE' });
      const at = { calls: w.calls().length, stored: await storedDiffs(w.installId) };
      expect(res.status).toBe(200);
      expect(w.calls().some((c) => c.status === 401)).toBe(true);
      await expectStopped(w, at);
    } finally {
      h.gh.holdRevokeAnswer = null;
    }
  });
});
