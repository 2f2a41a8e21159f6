/** Unit: the code-host self-emit filters (spec §6.3) on GitHub's recorded payloads. */
import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { tier1DropReason, tier2Drops } from '../../src/connectors/codehost/self-emit-filter.js';
import { PR_SUMMARY_SENTINEL, SLASH_REPLY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';
import type { Queryable } from '../../src/store/db.js';

const defs = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
const example = (name: string, action: string) =>
  structuredClone(
    defs.find((d) => d.name === name)!.examples.find((e) => (e as { action?: string }).action === action),
  ) as unknown as Record<string, any>;
const log = pino({ level: 'silent' });
const INSTALL = '2b0c6b8e-7d3a-4a55-9f0e-6c1f2e3d4a5b';
const OTHER_INSTALL = '7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';

/** A Queryable that answers the Tier-2 lookup from a set of `install:comment`, and records every statement. */
function db(emitted: Set<string>, failLookup = false) {
  const statements: string[] = [];
  const q = {
    async query(text: string, params?: unknown[]) {
      statements.push(text.split(/\s+/).slice(0, 3).join(' '));
      if (text.includes('emitted_events')) {
        if (failLookup) throw Object.assign(new Error('relation does not exist'), { code: '42P01' });
        const installs = params?.[0] as string[];
        const rows = (params?.[1] as string[])
          .map((provider_id, i) => ({ install_id: installs[i]!, provider_id }))
          .filter((r) => emitted.has(`${r.install_id}:${r.provider_id}`));
        return { rows, rowCount: rows.length };
      }
      return { rows: [], rowCount: 0 };
    },
  };
  return { q: q as unknown as Queryable, statements };
}

describe('Tier 1', () => {
  it('drops issue comments from a Bot sender, keeps them from a User', () => {
    const p = example('issue_comment', 'created');
    expect(tier1DropReason('issue_comment.created', p)).toBeNull();
    p.sender.type = 'Bot';
    expect(tier1DropReason('issue_comment.created', p)).toBe('bot_issue_comment');
    expect(tier1DropReason('issue_comment.edited', p)).toBe('bot_issue_comment');
  });

  it('drops any comment holding either sentinel, whoever sent it', () => {
    for (const sentinel of [PR_SUMMARY_SENTINEL, SLASH_REPLY_SENTINEL]) {
      const ic = example('issue_comment', 'created');
      ic.comment.body = `quoting: ${sentinel}`;
      expect(tier1DropReason('issue_comment.created', ic)).toBe('service_sentinel');
      const rc = example('pull_request_review_comment', 'created');
      rc.comment.body = `${sentinel}\nreply`;
      expect(tier1DropReason('pull_request_review_comment.created', rc)).toBe('service_sentinel');
    }
  });

  it('keeps everything else, Bot senders of other events included', () => {
    const pr = example('pull_request', 'opened');
    pr.sender.type = 'Bot';
    expect(tier1DropReason('pull_request.opened', pr)).toBeNull();
    expect(
      tier1DropReason('pull_request_review_comment.created', example('pull_request_review_comment', 'created')),
    ).toBeNull();
    expect(tier1DropReason('push', null)).toBeNull();
  });
});

describe('Tier 2', () => {
  it('drops the events whose comment.id this install emitted, one lookup under a savepoint', async () => {
    const p = example('issue_comment', 'created');
    const { q, statements } = db(new Set([`${INSTALL}:${p.comment.id}`]));
    const other = example('issue_comment', 'created');
    other.comment.id = 1;
    const asked = [p, other].map((payload) => ({ installId: INSTALL, payload }));
    expect(await tier2Drops(q, asked, log)).toEqual([true, false]);
    expect(statements).toEqual([
      'SAVEPOINT codehost_tier2',
      'SELECT DISTINCT e.install_id,',
      'RELEASE SAVEPOINT codehost_tier2',
    ]);
    expect(await tier2Drops(db(new Set([`${INSTALL}:1`])).q, [{ installId: INSTALL, payload: p }], log)).toEqual([
      false,
    ]);
  });

  it('drops a comment only for the install that wrote it, in a lookup for several installs', async () => {
    const p = example('issue_comment', 'created');
    const { q, statements } = db(new Set([`${INSTALL}:${p.comment.id}`]));
    const asked = [OTHER_INSTALL, INSTALL].map((installId) => ({ installId, payload: p }));
    expect(await tier2Drops(q, asked, log)).toEqual([false, true]);
    expect(statements.filter((s) => s.startsWith('SELECT'))).toHaveLength(1);
  });

  it('keeps the event when the lookup fails, and rolls back to the savepoint so the transaction goes on', async () => {
    const p = example('pull_request_review_comment', 'created');
    const { q, statements } = db(new Set([`${INSTALL}:${p.comment.id}`]), true);
    expect(await tier2Drops(q, [{ installId: INSTALL, payload: p }], log)).toEqual([false]);
    expect(statements).toEqual(['SAVEPOINT codehost_tier2', 'SELECT DISTINCT e.install_id,', 'ROLLBACK TO SAVEPOINT']);
  });

  it('does not look anything up for events without a comment', async () => {
    const { q, statements } = db(new Set());
    expect(await tier2Drops(q, [{ installId: INSTALL, payload: example('pull_request', 'opened') }], log)).toEqual([
      false,
    ]);
    expect(statements).toEqual([]);
  });
});
