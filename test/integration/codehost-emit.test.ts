/**
 * Integration: code-host write-back (spec §4.2; INTERFACE §3 emit, §8.4, §8.6, §8.26) on a
 * real node against the fake GitHub: each emit kind, its receipt and emitted-event
 * record; refusals before any upstream call; GitHub's failures and rate limits; pacing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PR_SUMMARY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';
import { readCodehostSecret, storeInstallationToken } from '../../src/store/codehost-credentials.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { loadKeyring } from '../../src/store/data-keys.js';
import { TEST_MASTER_KEY } from '../support/env.js';
import { startCodehostHarness, type CodehostHarness } from '../support/github-harness.js';

let h: CodehostHarness;
type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
let t: Tenant;
let base = 6_200_000 + Math.floor(Math.random() * 1000) * 10;
const SHA = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821';

beforeAll(async () => {
  h = await startCodehostHarness();
  t = await h.tenant('emit');
});
afterAll(() => h?.stop());

/** A fresh installation per test: its own write pace and holds. */
async function fresh(): Promise<string> {
  return h.install(t, ++base);
}

async function emit(installId: string, kind: string, body: unknown) {
  const res = await h.api(`/api/v1/connectors/installs/${installId}/emit`, t, { body: { kind, body } });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    json: (await res.json()) as Record<string, any>,
  };
}

const records = async (installId: string) =>
  (
    await h.node.pool.query(
      `SELECT kind, repo_full_name, issue_or_pr_number, provider_id, by_actor_login FROM emitted_events
       WHERE install_id = $1 ORDER BY emitted_at`,
      [installId],
    )
  ).rows;

describe('codehost emit: every kind', () => {
  it('records the Idempotency-Key with the write, through the installation write actor (INTERFACE §9.3)', async () => {
    const id = await fresh();
    const res = await fetch(`${h.node.url}/api/v1/connectors/installs/${id}/emit`, {
      method: 'POST',
      headers: { ...t.auth, 'content-type': 'application/json', 'idempotency-key': 'gh-once' },
      body: JSON.stringify({
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'Codertocat/Hello-World', issue_number: 1, body: 'once' },
      }),
    });
    expect(res.status).toBe(200);
    const receipt = (await res.json()) as { provider_id: string };
    const { rows } = await h.node.pool.query(
      `SELECT provider_id FROM emitted_events WHERE install_id = $1 AND idempotency_key = 'gh-once'`,
      [id],
    );
    expect(rows.map((r) => r.provider_id)).toEqual([receipt.provider_id]);
  });

  it('writes each kind upstream, answers the receipt of §8.6 and records it with the five-field key', async () => {
    const id = await fresh();
    const repo = 'Codertocat/Hello-World';
    const summary = await emit(id, 'codehost.pr_summary_comment', {
      repo_full_name: repo,
      pr_number: 2,
      body: `${PR_SUMMARY_SENTINEL}\nv1`,
    });
    expect(summary).toMatchObject({
      status: 200,
      json: { kind: 'codehost.pr_summary_comment', install_id: id, provider_id: expect.stringMatching(/^\d+$/) },
    });
    expect(Number.isNaN(Date.parse(summary.json.emitted_at))).toBe(false);
    const edited = await emit(id, 'codehost.pr_summary_comment', {
      repo_full_name: repo,
      pr_number: 2,
      body: `${PR_SUMMARY_SENTINEL}\nv2`,
      existing_comment_id: summary.json.provider_id,
    });
    expect(edited.json.provider_id).toBe(summary.json.provider_id);
    expect(h.gh.repos.comments.get(Number(summary.json.provider_id))?.body).toBe(`${PR_SUMMARY_SENTINEL}\nv2`);

    const comment = await emit(id, 'codehost.issue_comment', { repo_full_name: repo, issue_number: 1, body: 'hello' });
    const review = await emit(id, 'codehost.review_comment', {
      repo_full_name: repo,
      pr_number: 2,
      commit_id: SHA,
      path: 'README.md',
      line: 3,
      body: 'nit',
      side: 'LEFT',
    });
    const label = await emit(id, 'codehost.label', {
      repo_full_name: repo,
      issue_number: 1,
      labels: ['bug', '   ', ' ui '],
    });
    const status = await emit(id, 'codehost.commit_status', {
      repo_full_name: repo,
      sha: SHA,
      state: 'success',
      description: 'd'.repeat(140),
      context: 'service/ci',
      target_url: 'https://ci.example/1',
    });
    for (const r of [comment, review, label, status]) expect(r.status).toBe(200);

    expect(h.gh.repos.comments.get(Number(comment.json.provider_id))).toMatchObject({ body: 'hello', issue_number: 1 });
    expect(h.gh.repos.reviewComments.get(Number(review.json.provider_id))).toMatchObject({
      path: 'README.md',
      line: 3,
      side: 'LEFT',
      commit_id: SHA,
    });
    expect(label.json.provider_id).toBe(`${repo}#1`);
    expect(h.gh.repos.labels.get(`${repo}#1`)).toEqual(['bug', 'ui']);
    expect(h.gh.repos.statuses.find((s) => String(s.id) === status.json.provider_id)).toMatchObject({
      state: 'success',
      context: 'service/ci',
    });

    const bot = `${h.gh.slug}[bot]`;
    expect(await records(id)).toEqual([
      {
        kind: 'codehost.pr_summary_comment',
        repo_full_name: repo,
        issue_or_pr_number: '2',
        provider_id: summary.json.provider_id,
        by_actor_login: bot,
      },
      {
        kind: 'codehost.issue_comment',
        repo_full_name: repo,
        issue_or_pr_number: '1',
        provider_id: comment.json.provider_id,
        by_actor_login: bot,
      },
      {
        kind: 'codehost.review_comment',
        repo_full_name: repo,
        issue_or_pr_number: '2',
        provider_id: review.json.provider_id,
        by_actor_login: bot,
      },
      {
        kind: 'codehost.label',
        repo_full_name: repo,
        issue_or_pr_number: '1',
        provider_id: `${repo}#1`,
        by_actor_login: null,
      },
      {
        kind: 'codehost.commit_status',
        repo_full_name: repo,
        issue_or_pr_number: '0',
        provider_id: status.json.provider_id,
        by_actor_login: bot,
      },
    ]);
    // Writes went out with the installation token, never the App JWT.
    expect(
      h.gh.calls.filter((c) => c.method !== 'GET' && c.path.startsWith('/repos/')).every((c) => c.auth === 'token'),
    ).toBe(true);
  });

  it('refuses bad payloads with 400 bad_config before any upstream call', async () => {
    const id = await fresh();
    const before = h.gh.calls.length;
    const bad: Array<[string, unknown]> = [
      ['codehost.pr_summary_comment', { repo_full_name: 'o/r', pr_number: 1, body: 'no sentinel' }],
      ['codehost.label', { repo_full_name: 'o/r', issue_number: 1, labels: [' ', '\t'] }],
      ['codehost.commit_status', { repo_full_name: 'o/r', sha: SHA, state: 'success', description: 'd'.repeat(141) }],
      ['codehost.commit_status', { repo_full_name: 'o/r', sha: SHA, state: 'done' }],
      [
        'codehost.review_comment',
        { repo_full_name: 'o/r', pr_number: 1, commit_id: SHA, path: 'a', line: 1, body: 'x', side: 'MIDDLE' },
      ],
      ['codehost.issue_comment', { repo_full_name: 'o/r', body: 'missing number' }],
      ['codehost.nonsense', {}],
      ['chatapp.message', { channel_id: 'C1', text: 'hi' }],
    ];
    for (const [kind, body] of bad) {
      const r = await emit(id, kind, body);
      expect(r.status, `${kind} ${JSON.stringify(body)}`).toBe(400);
      expect(r.json.error.code).toBe('bad_config');
    }
    expect(h.gh.calls.slice(before).filter((c) => c.path.startsWith('/repos/'))).toEqual([]);
  });
});

describe('codehost emit: GitHub failures', () => {
  it('a refusal is 502 upstream_error with GitHub’s message, and nothing is recorded', async () => {
    const id = await fresh();
    h.gh.fail({
      method: 'POST',
      path: /\/pulls\/7\/comments$/,
      status: 422,
      body: { message: 'Validation Failed: pull_request_review_thread.line must be part of the diff' },
    });
    const r = await emit(id, 'codehost.review_comment', {
      repo_full_name: 'o/r',
      pr_number: 7,
      commit_id: SHA,
      path: 'a.ts',
      line: 999,
      body: 'x',
    });
    expect(r.status).toBe(502);
    expect(r.json.error.code).toBe('upstream_error');
    expect(r.json.error.message).toContain('must be part of the diff');
    expect(await records(id)).toEqual([]);
  });

  it('a secondary rate limit is 429 with GitHub’s retry-after, and holds that installation’s writes only', async () => {
    const held = await fresh();
    const other = await fresh();
    h.gh.fail({
      method: 'POST',
      path: /\/issues\/3\/comments$/,
      status: 403,
      headers: { 'retry-after': '30' },
      body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.' },
    });
    const body = { repo_full_name: 'o/r', issue_number: 3, body: 'x' };
    const first = await emit(held, 'codehost.issue_comment', body);
    expect(first).toMatchObject({ status: 429, retryAfter: '30', json: { error: { code: 'rate_limited' } } });
    const posts = () => h.gh.callsTo('POST', /\/issues\/3\/comments$/).length;
    const sent = posts();
    const second = await emit(held, 'codehost.issue_comment', body);
    expect(second.status).toBe(429);
    expect(Number(second.retryAfter)).toBeGreaterThanOrEqual(28);
    expect(posts()).toBe(sent);
    expect((await emit(other, 'codehost.issue_comment', body)).status).toBe(200);
  });

  it('a rate limit without retry-after holds for at least 60 s', async () => {
    const id = await fresh();
    h.gh.fail({
      method: 'POST',
      path: /\/issues\/4\/comments$/,
      status: 429,
      body: { message: 'API rate limit exceeded' },
    });
    const r = await emit(id, 'codehost.issue_comment', { repo_full_name: 'o/r', issue_number: 4, body: 'x' });
    expect(r.status).toBe(429);
    expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(60);
  });

  it('a brand-new token answering 401 is retried briefly and the write succeeds', async () => {
    const id = await fresh();
    h.gh.freshTokenUnauthorizedMs = 600;
    try {
      const health = await h.api(`/api/v1/connectors/installs/${id}/health`, t); // mints a brand-new token
      expect(health.status).toBe(200);
      const r = await emit(id, 'codehost.issue_comment', {
        repo_full_name: 'o/r',
        issue_number: 5,
        body: 'after replication',
      });
      expect(r.status).toBe(200);
      expect(h.gh.callsTo('POST', /\/issues\/5\/comments$/).length).toBeGreaterThanOrEqual(2);
    } finally {
      h.gh.freshTokenUnauthorizedMs = 0;
    }
  });
});

describe('codehost emit: installation tokens', () => {
  it('are cached encrypted in Postgres for every node, reused, and replaced before they expire', async () => {
    const id = await fresh();
    const binding = { tenantId: t.tenant_id, installId: id };
    // The deployment's keyring, as a node loads it: credentials are under its data key.
    const cipher = CredentialCipher.fromMasterKeys(
      await loadKeyring(h.node.pool, { current: TEST_MASTER_KEY, previous: [] }),
    );
    const mints = () => h.gh.callsTo('POST', new RegExp(`/app/installations/${base}/access_tokens$`)).length;
    const body = { repo_full_name: 'tok/r', issue_number: 1, body: 'x' };
    const proof = (await readCodehostSecret(h.node.pool, cipher, binding))!.token!;
    expect(mints()).toBe(1);

    expect((await emit(id, 'codehost.issue_comment', body)).status).toBe(200);
    expect(mints()).toBe(1);
    const used = h.gh.callsTo('POST', /^\/repos\/tok\/r\//).at(-1)!;
    expect(used.token).toBe(proof.cache_value.split('|')[0]);

    // Four minutes left: inside the refresh margin, so the next call mints a new one.
    await storeInstallationToken(h.node.pool, cipher, binding, {
      ...proof,
      expires_at: new Date(Date.now() + 4 * 60_000).toISOString(),
    });
    expect((await emit(id, 'codehost.issue_comment', body)).status).toBe(200);
    expect(mints()).toBe(2);
    const fresh2 = (await readCodehostSecret(h.node.pool, cipher, binding))!.token!;
    expect(fresh2.cache_value).not.toBe(proof.cache_value);
    expect(Date.parse(fresh2.expires_at)).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(h.gh.callsTo('POST', /^\/repos\/tok\/r\//).at(-1)!.token).toBe(fresh2.cache_value.split('|')[0]);
  });
});

describe('codehost emit: pacing and records', () => {
  it('writes of one installation are paced: a burst of 5, then about 80 a minute', async () => {
    const id = await fresh();
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        emit(id, 'codehost.issue_comment', { repo_full_name: 'pace/r', issue_number: 9, body: `n${i}` }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(7).fill(200));
    const at = h.gh
      .callsTo('POST', /^\/repos\/pace\/r\/issues\/9\/comments$/)
      .map((c) => c.at)
      .sort((x, y) => x - y);
    expect(at).toHaveLength(7);
    // A token bucket (write-pacer.ts) paces from the start of the burst: the sixth write's
    // token refills 750 ms after the bucket was full, the seventh's 750 ms later. The gap
    // between the fifth and sixth writes is shorter by however long the first five took,
    // which on a loaded machine can be most of it; the bounds from the start never shrink.
    const slotMs = 60_000 / 80;
    expect(at[5]! - started).toBeGreaterThanOrEqual(slotMs);
    expect(at[6]! - started).toBeGreaterThanOrEqual(2 * slotMs);
  });

  it('a failure to write the emitted record is logged and never undoes the write', async () => {
    const id = await fresh();
    await h.node.pool.query(`
      CREATE OR REPLACE FUNCTION codehost_test_refuse_record() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'records refused for this test'; END $$;
      DROP TRIGGER IF EXISTS codehost_test_refuse_record ON emitted_events;
      CREATE TRIGGER codehost_test_refuse_record BEFORE INSERT ON emitted_events
        FOR EACH ROW WHEN (NEW.repo_full_name = 'norecord/r') EXECUTE FUNCTION codehost_test_refuse_record();`);
    try {
      const r = await emit(id, 'codehost.issue_comment', {
        repo_full_name: 'norecord/r',
        issue_number: 1,
        body: 'kept',
      });
      expect(r.status).toBe(200);
      expect(h.gh.repos.comments.get(Number(r.json.provider_id))?.body).toBe('kept');
      expect(await records(id)).toEqual([]);
    } finally {
      await h.node.pool.query('DROP TRIGGER IF EXISTS codehost_test_refuse_record ON emitted_events');
    }
  });
});
