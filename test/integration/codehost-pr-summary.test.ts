/**
 * Integration: the auto-managed PR summary comment (spec §1, §6.1 rule 1; INTERFACE §8.7)
 * on a real node against the fake GitHub, driven by GitHub's recorded pull_request
 * payloads: one comment per PR however many deliveries race, edited in place, written
 * once per installation by its oldest install, found again by its sentinel.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PR_SUMMARY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import type { GitHubFile as FakeFile } from 'connector-service/testing';
import { until } from '../support/until.js';

let h: CodehostHarness;
type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
let oldest: Tenant;
let newer: Tenant;
let oldestInstall: string;
let newerInstall: string;
const P = 7_300_000 + Math.floor(Math.random() * 1000);
const REPO = 'Codertocat/Hello-World';

beforeAll(async () => {
  h = await startCodehostHarness();
  oldest = await h.tenant('oldest');
  newer = await h.tenant('newer');
  oldestInstall = await h.install(oldest, P);
  newerInstall = await h.install(newer, P);
});
afterAll(() => h?.stop());

function files(n: number): FakeFile[] {
  return Array.from({ length: n }, (_, i) => ({
    filename: `src/file-${i}.ts`,
    status: 'modified',
    additions: i + 1,
    deletions: i,
    changes: 2 * i + 1,
    patch: `@@ -1 +1 @@\n-a${i}\n+b${i}`,
  }));
}

function prEvent(action: 'opened' | 'reopened' | 'synchronize', number: number, head: string) {
  const p = forInstallation(
    examplePayload('pull_request', action === 'synchronize' ? 'synchronize' : action),
    P,
  ) as Record<string, any>;
  return {
    ...p,
    number,
    pull_request: {
      ...p.pull_request,
      number,
      title: `Change ${number}`,
      commits: 3,
      additions: 10,
      deletions: 4,
      changed_files: 2,
      head: { ...p.pull_request.head, sha: head },
    },
  };
}

const summaries = (number: number) =>
  [...h.gh.repos.comments.values()].filter(
    (c) => c.repo === REPO && c.issue_number === number && c.body.includes(PR_SUMMARY_SENTINEL),
  );
const writes = (method: string, number: number | null) =>
  h.gh.calls.filter(
    (c) =>
      c.method === method &&
      (method === 'POST'
        ? c.path === `/repos/${REPO}/issues/${number}/comments`
        : /\/issues\/comments\/\d+$/.test(c.path)),
  );
const summaryRecords = async (installId: string, number: number) =>
  (
    await h.node.pool.query(
      `SELECT provider_id FROM emitted_events WHERE install_id = $1 AND kind = 'codehost.pr_summary_comment'
       AND issue_or_pr_number = $2`,
      [installId, number],
    )
  ).rows.map((r) => r.provider_id as string);

describe('codehost PR summary comment', () => {
  it('three concurrent synchronize deliveries leave exactly one summary comment, created once and edited', async () => {
    const number = 11;
    h.gh.repos.prFiles.set(`${REPO}#${number}`, files(2));
    const patchesBefore = writes('PATCH', null).length;
    const heads = ['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(40)];
    const answers = await Promise.all(
      heads.map((sha) => h.deliver('pull_request', prEvent('synchronize', number, sha))),
    );
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202]);
    await until('two edits after the first comment', async () => writes('PATCH', null).length - patchesBefore >= 2);

    const [comment, ...extra] = summaries(number);
    expect(extra).toEqual([]);
    expect(writes('POST', number)).toHaveLength(1);
    expect(writes('PATCH', null).length - patchesBefore).toBe(2);
    expect(comment!.body).toContain(`Change ${number}`);
    expect(comment!.body).toContain('`Codertocat`');
    expect(comment!.body).toMatch(/\| 3 \| 2 \| \+10 \/ −4 \|/);
    expect(comment!.body).toContain('| `src/file-1.ts` | modified | 2 | 1 |');
    expect(comment!.body.length).toBeLessThanOrEqual(65_536);
    // GitHub-side effects once per installation, by its oldest install (INTERFACE §8.7).
    expect(await summaryRecords(oldestInstall, number)).toEqual([String(comment!.id)]);
    expect(await summaryRecords(newerInstall, number)).toEqual([]);
    // One files-list call per delivery, and the summary's own comment is never ingested.
    expect(h.gh.callsTo('GET', new RegExp(`/pulls/${number}/files$`))).toHaveLength(3);
  });

  it('opened and reopened create or edit the same comment; other actions write nothing', async () => {
    const number = 12;
    h.gh.repos.prFiles.set(`${REPO}#${number}`, files(1));
    await h.deliver('pull_request', prEvent('opened', number, 'd'.repeat(40)));
    await until('summary created', async () => summaries(number).length === 1);
    const patches = writes('PATCH', null).length;
    const closed = { ...prEvent('opened', number, 'd'.repeat(40)), action: 'closed' };
    await h.deliver('pull_request', closed);
    await h.deliver('pull_request', prEvent('reopened', number, 'e'.repeat(40)));
    await until('summary edited', async () => writes('PATCH', null).length > patches);
    // Events of one install are handled in order: `closed` was done before `reopened`.
    expect(writes('PATCH', null).length).toBe(patches + 1);
    expect(writes('POST', number)).toHaveLength(1);
    expect(summaries(number)).toHaveLength(1);
    expect(summaries(number)[0]!.body).toContain('eeeeeee');
  });

  it('a lost record is found again by the sentinel; a deleted comment is replaced', async () => {
    const number = 13;
    h.gh.repos.prFiles.set(`${REPO}#${number}`, files(1));
    await h.deliver('pull_request', prEvent('opened', number, 'f'.repeat(40)));
    // The record follows the comment; both exist before it is lost.
    await until('summary recorded', async () => (await summaryRecords(oldestInstall, number)).length === 1);
    const first = summaries(number)[0]!;

    await h.node.pool.query(`DELETE FROM emitted_events WHERE install_id = $1 AND issue_or_pr_number = $2`, [
      oldestInstall,
      number,
    ]);
    await h.deliver('pull_request', prEvent('synchronize', number, '1'.repeat(40)));
    await until('record written again', async () => (await summaryRecords(oldestInstall, number)).length === 1);
    expect(summaries(number).map((c) => c.id)).toEqual([first.id]);
    expect(first.body).toContain('1111111');
    expect(writes('POST', number)).toHaveLength(1);

    h.gh.repos.comments.delete(first.id);
    await h.deliver('pull_request', prEvent('synchronize', number, '2'.repeat(40)));
    const replaced = await until('a new summary, recorded', async () => {
      const [c] = summaries(number);
      return c && (await summaryRecords(oldestInstall, number)).includes(String(c.id)) ? c : null;
    });
    expect(replaced.id).not.toBe(first.id);
    expect(await summaryRecords(oldestInstall, number)).toEqual([String(replaced.id)]);
  });

  it('after the oldest install is uninstalled, the next one takes over the same comment', async () => {
    const number = 14;
    h.gh.repos.prFiles.set(`${REPO}#${number}`, files(1));
    await h.deliver('pull_request', prEvent('opened', number, '3'.repeat(40)));
    await until('summary created', async () => summaries(number).length === 1);
    const del = await h.api(`/api/v1/connectors/installs/${oldestInstall}`, oldest, { method: 'DELETE' });
    expect(del.status).toBe(200);
    const delivery = randomUUID();
    await h.deliver('pull_request', prEvent('synchronize', number, '4'.repeat(40)), { delivery });
    await until(
      'newer install records the comment',
      async () => (await summaryRecords(newerInstall, number)).length === 1,
    );
    expect(summaries(number)).toHaveLength(1);
    expect(summaries(number)[0]!.body).toContain('4444444');
  });
});

describe('codehost PR summary comment when GitHub misbehaves', () => {
  it('a passing failure is retried; a long rate-limit hold skips the summary without holding up later events', async () => {
    const t = await h.tenant('flaky');
    const q = P + 1;
    const installId = await h.install(t, q);
    const event = (number: number) => ({ ...prEvent('opened', number, '5'.repeat(40)), installation: { id: q } });

    h.gh.repos.prFiles.set(`${REPO}#21`, files(1));
    h.gh.fail({ method: 'POST', path: /\/issues\/21\/comments$/, status: 502, body: { message: 'Server Error' } });
    await h.deliver('pull_request', event(21));
    await until('summary written on the retry', async () => summaries(21).length === 1, { timeoutMs: 15_000 });
    expect(writes('POST', 21)).toHaveLength(2);

    h.gh.repos.prFiles.set(`${REPO}#22`, files(1));
    h.gh.fail({
      method: 'POST',
      path: /\/issues\/22\/comments$/,
      status: 403,
      headers: { 'retry-after': '3600' },
      body: { message: 'You have exceeded a secondary rate limit.' },
    });
    await h.deliver('pull_request', event(22));
    const next = randomUUID();
    await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), q), { delivery: next });
    // Stored while the hour-long hold still runs: had the summary waited it out, the install's
    // next event would sit behind it for an hour, far past this wait's deadline.
    await until('the next event stored', async () => (await h.eventIds(t, installId)).includes(next));
    // Skipped, not retried: one refused attempt, no comment, and the effect settled (nothing
    // left to retry). It runs on its own schedule, maybe after the next event was stored.
    const settled = async () =>
      (
        await h.node.pool.query<{ state: string }>(
          `SELECT state FROM effects WHERE install_id = $1 AND serial_key LIKE '%#22'`,
          [installId],
        )
      ).rows.map((r) => r.state);
    await until('the summary effect settled', async () => (await settled()).join() === 'done');
    expect(summaries(22)).toEqual([]);
    expect(writes('POST', 22)).toHaveLength(1);
  });
});
