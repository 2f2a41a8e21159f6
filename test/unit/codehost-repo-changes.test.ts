/**
 * unit: the pure parts of index retries and repository changes: the retry backoff of a failed index and
 * the row patches of index outcomes; repos added to a walk (queued within the cap, a
 * finished walk reopened); `installation_repositories` payloads (GitHub's recorded
 * examples); slash commands in PR review comments; the review-thread reply as a write of
 * the service's own that the emit route refuses.
 */
import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { describe, expect, it } from 'vitest';
import {
  finishedCursor,
  initialCursor,
  queueAddedRepos,
  progressOf,
} from '../../src/connectors/codehost/backfill/backfill-cursor.js';
import { repositoryChangesOf } from '../../src/connectors/codehost/backfill/installation-repos.js';
import { parseEmit, parseWrite } from '../../src/connectors/codehost/emit-schema.js';
import {
  DEFAULT_RETRY_POLICY,
  failedPatch,
  readyPatch,
  retryDelayMs,
} from '../../src/connectors/codehost/indexer/index-outcome.js';
import { slashCommandOf } from '../../src/effects/codehost/answer-slash.js';
import type { IngestEvent } from '../../src/runtime/ports.js';

const definitions = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
const example = (name: string, action: string): Record<string, any> =>
  structuredClone(
    definitions.find((d) => d.name === name)!.examples.find((e) => (e as { action?: string }).action === action),
  ) as Record<string, any>;
const event = (kind: string, payload: Record<string, unknown>): IngestEvent => ({
  installId: '00000000-0000-4000-8000-000000000001',
  tenantId: '00000000-0000-4000-8000-000000000002',
  connectorId: 'codehost',
  id: 'delivery-1',
  kind,
  occurredAt: null,
  payload,
});

describe('unit: retry backoff of a failed index', () => {
  const MIN = 60_000;
  it('starts at 1 minute, doubles to 1 hour, jitters over the whole wait (the one retry policy), and gives up after maxRetries', () => {
    const ceilings = [1, 2, 4, 8, 16, 32, 60, 60, 60, 60].map((m) => m * MIN);
    for (const [i, ceiling] of ceilings.entries()) {
      expect(retryDelayMs(i + 1, DEFAULT_RETRY_POLICY, () => 0)).toBe(0);
      expect(retryDelayMs(i + 1, DEFAULT_RETRY_POLICY, () => 0.5)).toBe(ceiling / 2);
      expect(retryDelayMs(i + 1, DEFAULT_RETRY_POLICY, () => 0.999_999)).toBeLessThanOrEqual(ceiling);
      expect(retryDelayMs(i + 1, DEFAULT_RETRY_POLICY, () => 0.999_999)).toBeGreaterThan(ceiling * 0.99);
    }
    expect(retryDelayMs(DEFAULT_RETRY_POLICY.maxRetries + 1, DEFAULT_RETRY_POLICY)).toBeNull();
    expect(retryDelayMs(0, DEFAULT_RETRY_POLICY)).toBeNull();
  });

  it('a failure counts up and schedules the next retry; a ready index starts the count over', () => {
    const policy = { baseMs: 100, maxMs: 1000, maxRetries: 2 };
    const first = failedPatch(0, 'boom', { policy, owner: 'ns/n1', nowMs: 10_000, random: () => 0.5 });
    expect(first).toEqual({
      patch: {
        status: 'failed',
        error: 'boom',
        lock_owner: null,
        lock_expires_at: null,
        retries: 1,
        retry_at: 10_050,
        retry_owner: 'ns/n1',
      },
      retryInMs: 50,
    });
    expect(failedPatch(1, 'boom', { policy, owner: 'ns/n1', nowMs: 0, random: () => 0.5 }).retryInMs).toBe(100);
    const gaveUp = failedPatch(2, 'boom', { policy, owner: 'ns/n1', nowMs: 0 });
    expect(gaveUp.retryInMs).toBeNull();
    expect(gaveUp.patch).toMatchObject({ retries: 3, retry_at: null, retry_owner: null });
    expect(readyPatch('a'.repeat(40), 5)).toMatchObject({
      status: 'ready',
      last_indexed_sha: 'a'.repeat(40),
      retries: 0,
      retry_at: null,
    });
  });
});

describe('unit: repos added to a PR-diff walk', () => {
  const caps = { pendingRepos: 3, pendingPrs: 10 };
  it('queues new repos behind the pending ones, never twice, within the cap', () => {
    const c = initialCursor();
    c.phase = 'PrDiffFetching';
    c.repo = { id: 1, full_name: 'o/one', pulls_page: 1, pulls_after: null, pulls_listed: true };
    c.pending_repos = [2];
    c.pending_prs = [4];
    const { cursor, queued, dropped } = queueAddedRepos(c, [1, 2, 3, 3, 4, 5], caps);
    expect(queued).toEqual([3, 4]);
    expect(dropped).toEqual([5]);
    expect(cursor.pending_repos).toEqual([2, 3, 4]);
    expect(cursor.phase).toBe('PrDiffFetching');
    expect(cursor.counts.repos_listed).toBe(2);
    expect(c.pending_repos).toEqual([2]);
  });

  it('reopens a finished walk for the added repos alone, its counts carried on', () => {
    const done = initialCursor();
    done.phase = 'Done';
    done.counts = { ...done.counts, steps: 9, repos_listed: 2, repos_done: 2, prs_done: 5 };
    const progress = { state: 'complete', updated_at: '2024-01-01T00:00:00.000Z', ...progressOf(done) };
    const { cursor, queued } = queueAddedRepos(finishedCursor(progress), [7], caps);
    expect(queued).toEqual([7]);
    expect(cursor).toMatchObject({ phase: 'PrEnumerating', repos_listed: true, pending_repos: [7], repo: null });
    expect(cursor.counts).toMatchObject({ steps: 9, repos_listed: 3, repos_done: 2, prs_done: 5 });
    // Nothing added: the walk stays finished.
    expect(queueAddedRepos(finishedCursor(progress), [], caps).cursor.phase).toBe('Done');
  });
});

describe('unit: installation_repositories payloads', () => {
  it('reads the added and removed repos of GitHub’s recorded examples, with clone URLs on the web origin', () => {
    const added = repositoryChangesOf(
      event('installation_repositories.added', example('installation_repositories', 'added')),
    );
    expect(added).toEqual({
      added: [
        { repo_id: 186853007, full_name: 'Codertocat/Space', clone_url: 'https://github.com/Codertocat/Space.git' },
      ],
      removed: [],
    });
    const removed = repositoryChangesOf(
      event('installation_repositories.removed', example('installation_repositories', 'removed')),
    );
    expect(removed).toEqual({
      added: [],
      removed: [
        { repo_id: 1296269, full_name: 'octocat/Hello-World', clone_url: 'https://github.com/octocat/Hello-World.git' },
      ],
    });
  });

  it('takes a GitHub Enterprise origin from the sender, skips malformed entries, and ignores other events', () => {
    const p = example('installation_repositories', 'added');
    p.sender = { ...p.sender, html_url: 'https://ghe.example.test/octo' };
    p.repositories_added = [
      ...p.repositories_added,
      { id: -1, full_name: 'a/b' },
      { id: 5, full_name: '../etc' },
      { id: 7, full_name: 'acme/..' },
      null,
      { id: 6, full_name: 'acme/widgets' },
    ];
    const changes = repositoryChangesOf(event('installation_repositories.added', p));
    expect(changes?.added.map((r) => r.clone_url)).toEqual([
      'https://ghe.example.test/Codertocat/Space.git',
      'https://ghe.example.test/acme/widgets.git',
    ]);
    expect(repositoryChangesOf(event('installation.created', p))).toBeNull();
  });
});

describe('unit: slash commands in PR review comments', () => {
  const review = (body: string, extra: Record<string, unknown> = {}, sender = 'User') => {
    const p = example('pull_request_review_comment', 'created');
    return event('pull_request_review_comment.created', {
      ...p,
      comment: { ...p.comment, body, ...extra },
      sender: { ...p.sender, type: sender },
    });
  };

  it('answers in the command’s thread: at the comment itself, or at its thread’s first comment when it is a reply', () => {
    const top = slashCommandOf(review('/service explain Foo'));
    expect(top).toMatchObject({
      commentId: '284312630',
      threadRoot: 284312630,
      place: { repo_full_name: 'Codertocat/Hello-World', number: 2, in: 'review_comments' },
    });
    expect(top?.command).toEqual({ verb: 'explain', argument: 'Foo' });
    expect(slashCommandOf(review('/service help', { in_reply_to_id: 111 }))?.threadRoot).toBe(111);
  });

  it('ignores bots, our own replies, other actions and plain comments', () => {
    expect(slashCommandOf(review('/service help', {}, 'Bot'))).toBeNull();
    expect(slashCommandOf(review('<!-- service:slash-reply -->\n/service help'))).toBeNull();
    expect(slashCommandOf(review('looks good'))).toBeNull();
    const edited = review('/service help');
    expect(slashCommandOf({ ...edited, kind: 'pull_request_review_comment.edited' })).toBeNull();
  });
});

describe('unit: the review-thread reply is a write of the service’s own', () => {
  const body = {
    repo_full_name: 'acme/widgets',
    pr_number: 2,
    comment_id: 284312630,
    body: '<!-- service:slash-reply -->\nhi',
  };
  it('the write actor accepts it; the emit route refuses it as an unknown kind', () => {
    expect(parseWrite('codehost.review_comment_reply', body)).toEqual({
      kind: 'codehost.review_comment_reply',
      ...body,
    });
    expect(() => parseEmit('codehost.review_comment_reply', body)).toThrow(
      expect.objectContaining({ code: 'bad_config' }),
    );
    expect(() => parseWrite('codehost.review_comment_reply', { ...body, comment_id: 0 })).toThrow(
      expect.objectContaining({ code: 'bad_config' }),
    );
    expect(
      parseWrite('codehost.issue_comment', { repo_full_name: 'acme/widgets', issue_number: 1, body: 'x' }).kind,
    ).toBe('codehost.issue_comment');
  });
});
