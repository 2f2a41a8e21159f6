/** Unit: the five code-host emit kinds and each BadConfig rule (spec §4.2). */
import { describe, expect, it } from 'vitest';
import { BadConfig } from '../../src/errors.js';
import { CODEHOST_EMIT_KINDS, parseEmit } from '../../src/connectors/codehost/emit-schema.js';
import { PR_SUMMARY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';

const SHA = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821';
const valid: Record<(typeof CODEHOST_EMIT_KINDS)[number], Record<string, unknown>> = {
  'codehost.pr_summary_comment': { repo_full_name: 'o/r', pr_number: 2, body: `${PR_SUMMARY_SENTINEL}\nhi` },
  'codehost.issue_comment': { repo_full_name: 'o/r', issue_number: 1, body: 'hello' },
  'codehost.review_comment': {
    repo_full_name: 'o/r',
    pr_number: 2,
    commit_id: SHA,
    path: 'a.ts',
    line: 3,
    body: 'nit',
  },
  'codehost.label': { repo_full_name: 'o/r', issue_number: 1, labels: ['bug'] },
  'codehost.commit_status': { repo_full_name: 'o/r', sha: SHA, state: 'pending' },
};

function refusal(kind: string, body: unknown): BadConfig {
  try {
    parseEmit(kind, body);
  } catch (err) {
    expect(err).toBeInstanceOf(BadConfig);
    expect((err as BadConfig).code).toBe('bad_config');
    return err as BadConfig;
  }
  throw new Error(`accepted ${kind} ${JSON.stringify(body)}`);
}

describe('parseEmit', () => {
  it('accepts each kind with its required fields, and its optional ones', () => {
    for (const [kind, body] of Object.entries(valid)) expect(parseEmit(kind, body)).toMatchObject({ kind, ...body });
    expect(
      parseEmit('codehost.pr_summary_comment', { ...valid['codehost.pr_summary_comment'], existing_comment_id: '123' }),
    ).toMatchObject({ existing_comment_id: 123 });
    expect(parseEmit('codehost.review_comment', { ...valid['codehost.review_comment'], side: 'RIGHT' })).toMatchObject({
      side: 'RIGHT',
    });
    expect(
      parseEmit('codehost.commit_status', {
        ...valid['codehost.commit_status'],
        state: 'failure',
        description: 'd'.repeat(140),
        context: 'ci',
        target_url: 'https://ci.example/1',
      }),
    ).toMatchObject({ description: 'd'.repeat(140), context: 'ci' });
    for (const state of ['error', 'failure', 'pending', 'success'])
      expect(parseEmit('codehost.commit_status', { ...valid['codehost.commit_status'], state })).toMatchObject({
        state,
      });
  });

  it('strips whitespace-only labels (and trims the rest)', () => {
    expect(
      parseEmit('codehost.label', { repo_full_name: 'o/r', issue_number: 1, labels: [' ', 'bug', '\t', ' ui '] }),
    ).toMatchObject({ labels: ['bug', 'ui'] });
  });

  it('refuses a PR summary body without the sentinel', () => {
    expect(
      refusal('codehost.pr_summary_comment', { ...valid['codehost.pr_summary_comment'], body: 'no marker' }).details,
    ).toEqual({ field: 'body' });
  });

  it('refuses labels that are empty once stripped', () => {
    for (const labels of [[], ['  '], [' ', '\n\t']])
      expect(refusal('codehost.label', { ...valid['codehost.label'], labels }).details).toEqual({ field: 'labels' });
  });

  it('refuses a status description over 140 characters and a state GitHub does not know', () => {
    expect(
      refusal('codehost.commit_status', { ...valid['codehost.commit_status'], description: 'd'.repeat(141) }).details,
    ).toEqual({ field: 'description' });
    for (const state of ['done', 'SUCCESS', '', 1])
      expect(refusal('codehost.commit_status', { ...valid['codehost.commit_status'], state }).details).toEqual({
        field: 'state',
      });
  });

  it('refuses a side other than LEFT or RIGHT', () => {
    for (const side of ['left', 'MIDDLE', 0])
      expect(refusal('codehost.review_comment', { ...valid['codehost.review_comment'], side }).details).toEqual({
        field: 'side',
      });
  });

  it('refuses every missing required field of every kind', () => {
    for (const [kind, body] of Object.entries(valid)) {
      for (const field of Object.keys(body)) {
        const without = Object.fromEntries(Object.entries(body).filter(([k]) => k !== field));
        expect(refusal(kind, without).details, `${kind} without ${field}`).toEqual({ field });
      }
    }
  });

  it('refuses malformed values, unknown fields and unknown kinds', () => {
    refusal('codehost.issue_comment', { ...valid['codehost.issue_comment'], repo_full_name: 'no-slash' });
    refusal('codehost.issue_comment', { ...valid['codehost.issue_comment'], issue_number: 0 });
    refusal('codehost.issue_comment', { ...valid['codehost.issue_comment'], body: '' });
    refusal('codehost.issue_comment', { ...valid['codehost.issue_comment'], body: 'x'.repeat(65_537) });
    refusal('codehost.review_comment', { ...valid['codehost.review_comment'], commit_id: 'abc' });
    refusal('codehost.commit_status', { ...valid['codehost.commit_status'], target_url: 'ftp://x' });
    refusal('codehost.issue_comment', { ...valid['codehost.issue_comment'], colour: 'red' });
    refusal('codehost.issue_comment', null);
    refusal('codehost.comment', valid['codehost.issue_comment']);
    refusal('chatapp.message', { channel_id: 'C1', text: 'x' });
  });
});
