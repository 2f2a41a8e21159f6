/**
 * Integration, INTERFACE §9.4: a side effect that fails upstream never holds back or
 * dead-letters ingest. GitHub answers 502 to the PR summary comment: the PR event and the
 * install's later events are stored at once, nothing is dead-lettered, the failure shows
 * on the install record, and the summary comment appears once after the fault clears.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PR_SUMMARY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { readEffectQueue } from '../../src/store/effect-metrics.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
let t: Awaited<ReturnType<CodehostHarness['tenant']>>;
let installId: string;
const P = 7_400_000 + Math.floor(Math.random() * 1000);
const REPO = 'Codertocat/Hello-World';

beforeAll(async () => {
  h = await startCodehostHarness();
  t = await h.tenant('effects');
  installId = await h.install(t, P);
});
afterAll(() => h?.stop());

interface InstallRecord {
  status: string;
  effects: { pending: number; failed: number; retrying: number; last_error: string | null };
}

describe('a failing side effect', () => {
  it('502 on the summary comment: six events stored within 10 s, nothing dead-lettered, one comment after', async () => {
    const number = 31;
    const failures = 3;
    h.gh.repos.prFiles.set(`${REPO}#${number}`, [
      { filename: 'a.ts', status: 'modified', additions: 1, deletions: 0, changes: 1, patch: '@@ -1 +1 @@\n+a' },
    ]);
    h.gh.fail({
      method: 'POST',
      path: new RegExp(`/repos/${REPO}/issues/${number}/comments$`),
      status: 502,
      times: failures,
    });
    const opened = forInstallation(examplePayload('pull_request', 'opened'), P) as Record<string, any>;
    opened.number = number;
    opened.pull_request = { ...opened.pull_request, number };
    const ids = [`pr-${P}`, ...Array.from({ length: 5 }, (_, i) => `later-${P}-${i}`)];
    const started = Date.now();
    expect((await h.deliver('pull_request', opened, { delivery: ids[0] })).status).toBe(202);
    for (const id of ids.slice(1)) {
      const issue = forInstallation(examplePayload('issues', 'opened'), P);
      expect((await h.deliver('issues', issue, { delivery: id })).status).toBe(202);
    }
    await until(
      'the PR event and five later events stored',
      async () => {
        const stored = new Set(await h.eventIds(t, installId));
        return ids.every((id) => stored.has(id));
      },
      { timeoutMs: 10_000 },
    );
    const storedAfterMs = Date.now() - started;
    expect(storedAfterMs).toBeLessThan(10_000);

    // The failure is visible on the install's record while it is being retried.
    const record = await until('the effect failure on the install record', async () => {
      const r = (await (await h.api(`/api/v1/connectors/installs/${installId}`, t)).json()) as InstallRecord;
      return r.effects.last_error?.includes('upstream_error') ? r : null;
    });
    expect(record.effects.failed).toBe(0);
    // ... and on /metrics as a queued effect waiting for its retry (this node's first scrape
    // reads the queue afresh).
    const text = await (await fetch(`${h.node.url}/metrics`)).text();
    const retrying = text
      .split('\n')
      .find((l) => l.startsWith('connector_service_effects_queued{') && l.includes('state="retrying"'));
    expect(retrying).toContain('connector="codehost"');
    expect(Number(retrying!.split(' ').pop())).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^connector_service_effects_oldest_queued_seconds\{connector="codehost"\} \d/m);

    // Once the fault is over (after `failures` refusals) the comment appears, once.
    const summaries = () =>
      [...h.gh.repos.comments.values()].filter(
        (c) => c.repo === REPO && c.issue_number === number && c.body.includes(PR_SUMMARY_SENTINEL),
      );
    await until('the summary comment', async () => summaries().length > 0, { timeoutMs: 90_000 });
    await until('no effect pending', async () => {
      const r = (await (await h.api(`/api/v1/connectors/installs/${installId}`, t)).json()) as InstallRecord;
      return r.effects.pending === 0;
    });
    expect(summaries()).toHaveLength(1);
    expect(h.gh.callsTo('POST', new RegExp(`/issues/${number}/comments$`))).toHaveLength(failures + 1);
    const { rows } = await h.node.pool.query(
      `SELECT count(*)::int AS n FROM dead_letters WHERE install_id = $1 OR msg_id LIKE $2`,
      [installId, `${installId}:%`],
    );
    expect(rows[0].n).toBe(0);
    // Nothing left to run in this test's namespace: the gauge's query says so.
    expect(await readEffectQueue(h.node.pool, h.node.namespace)).toEqual([]);
    console.log(
      `figures: 6 events stored ${storedAfterMs} ms after the first delivery; comment after ${failures} refusals`,
    );
  }, 120_000);
});
