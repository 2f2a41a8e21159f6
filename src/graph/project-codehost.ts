/**
 * Code-host events → graph (INTERFACE §4 kinds `{X-GitHub-Event}.{action}` / `push`, §5
 * kinds): repositories, pull requests (with the backfill's listing fields and `diff` or
 * `oversized`, INTERFACE §9.5), issues,
 * issue and review comments, reviews, commits from pushes, users.
 *
 * Versions come from GitHub's own clocks (`updated_at`, `submitted_at`, a commit's
 * `timestamp`); a delete or dismissal outranks an edit of the same second (version.ts).
 */
import type { z } from 'zod';
import type { IngestEvent } from '../runtime/ports.js';
import {
  BackfillDiffEvent,
  BackfillPullEvent,
  IssueCommentEvent,
  IssueTransferredEvent,
  IssuesEvent,
  PullRequestEvent,
  PushEvent,
  ReviewCommentEvent,
  ReviewEvent,
  labelNames,
  type Comment,
  type Issue,
  type PullRequest,
  type Repository,
  type User,
} from './codehost-payloads.js';
import type { NodeRef, ProjectOutcome } from './graph-write.js';
import type { GraphWriter } from './graph-writer.js';
import { timeMicros, versionAt, type Version } from './version.js';

/** Events the graph has nothing to learn from (installation lifecycle, ping, branches). */
const IGNORED_EVENTS = new Set([
  'installation',
  'installation_repositories',
  'ping',
  'create',
  'delete',
  'pull_request_review_thread',
]);

export async function projectCodehost(w: GraphWriter, event: IngestEvent): Promise<ProjectOutcome> {
  const [name = '', action = ''] = event.kind.split('.', 2);
  const at = (t: unknown, rank = 0): Version => versionAt(timeMicros(t) ?? 0n, rank, event.id);
  const parse = <S extends z.ZodType>(schema: S): z.infer<S> | null => {
    const r = schema.safeParse(event.payload);
    return r.success ? r.data : null;
  };
  const g = graphOf(w);

  switch (name) {
    case 'pull_request': {
      if (action === 'backfill_diff') {
        const b = parse(BackfillDiffEvent);
        if (!b) return 'invalid';
        // Only the backfill writes these, and it knows nothing newer about the repo.
        const v = at(0);
        const repo = await w.node('codehost.repository', String(b.repo_id), {
          identity: { repo_id: b.repo_id },
          props: { full_name: b.repo_full_name },
          version: v,
        });
        const pr = await w.node('codehost.pull_request', `${b.repo_full_name}#${b.pr_number}`, {
          identity: { repo_full_name: b.repo_full_name, number: b.pr_number },
          props: {
            oversized: b.oversized,
            diff: b.diff ?? null,
            diff_bytes: b.diff === undefined ? null : Buffer.byteLength(b.diff, 'utf8'),
          },
          version: v,
        });
        await w.edge('in_repo', pr, repo);
        return 'projected';
      }
      if (action === 'backfill') {
        // INTERFACE §9.5: versioned by the PR's own updated_at, exactly as a webhook of it,
        // so whichever is newer wins per prop whatever order they arrive in; the diff props
        // belong to the diff event alone and stay.
        const b = parse(BackfillPullEvent);
        if (!b || b.pull_request.number !== b.pr_number) return 'invalid';
        const repo = { id: b.repo_id, full_name: b.repo_full_name };
        await g.pullRequest(repo, b.pull_request, at(b.pull_request.updated_at));
        return 'projected';
      }
      const e = parse(PullRequestEvent);
      if (!e) return 'invalid';
      await g.pullRequest(e.repository, e.pull_request, at(e.pull_request.updated_at));
      return 'projected';
    }
    case 'issues': {
      if (action === 'transferred') {
        // INTERFACE §9.5: the node takes the new repository's identity and keeps its edges.
        const t = parse(IssueTransferredEvent);
        if (!t) return 'invalid';
        const { new_issue: ni, new_repository: nr } = t.changes;
        const kind = t.issue.pull_request ? 'codehost.pull_request' : 'codehost.issue';
        await w.moveNode(kind, `${t.repository.full_name}#${t.issue.number}`, `${nr.full_name}#${ni.number}`);
        const node = await g.issue(nr, ni, at(ni.updated_at), false);
        await w.dropOtherEdges('in_repo', node, await g.repository(nr, at(ni.updated_at)));
        return 'projected';
      }
      const e = parse(IssuesEvent);
      if (!e) return 'invalid';
      const deleted = action === 'deleted';
      await g.issue(e.repository, e.issue, at(e.issue.updated_at, deleted ? 1 : 0), deleted);
      return 'projected';
    }
    case 'issue_comment': {
      const e = parse(IssueCommentEvent);
      if (!e) return 'invalid';
      const parent = await g.issue(e.repository, e.issue, at(e.issue.updated_at), false);
      await g.comment(e.comment, parent, action === 'deleted', at(e.comment.updated_at, action === 'deleted' ? 1 : 0), {
        comment_type: 'issue_comment',
      });
      return 'projected';
    }
    case 'pull_request_review_comment': {
      const e = parse(ReviewCommentEvent);
      if (!e) return 'invalid';
      const pr = await g.pullRequest(e.repository, e.pull_request, at(e.pull_request.updated_at));
      const c = e.comment;
      const deleted = action === 'deleted';
      const comment = await g.comment(c, pr, deleted, at(c.updated_at, deleted ? 1 : 0), {
        comment_type: 'review_comment',
        path: c.path ?? null,
        line: c.line ?? null,
        side: c.side ?? null,
        commit_id: c.commit_id ?? null,
      });
      if (c.in_reply_to_id) {
        const parent = await w.node('codehost.comment', String(c.in_reply_to_id), {
          identity: { comment_id: c.in_reply_to_id },
        });
        await w.edge('reply_to', comment, parent);
      }
      return 'projected';
    }
    case 'pull_request_review': {
      const e = parse(ReviewEvent);
      if (!e) return 'invalid';
      const pr = await g.pullRequest(e.repository, e.pull_request, at(e.pull_request.updated_at));
      const r = e.review;
      // A dismissal keeps submitted_at; it must still win over the submission it dismisses.
      const rank = action === 'dismissed' ? 2 : action === 'edited' ? 1 : 0;
      const v = at(r.submitted_at ?? e.pull_request.updated_at, rank);
      const review = await w.node('codehost.review', String(r.id), {
        identity: { review_id: r.id },
        props: {
          state: r.state.toLowerCase(),
          body: r.body ?? null,
          commit_id: r.commit_id ?? null,
          html_url: r.html_url,
          submitted_at: r.submitted_at ?? null,
        },
        version: v,
      });
      await w.edge('review_of', review, pr);
      if (r.user) await w.edge('authored_by', review, await g.user(r.user, v));
      return 'projected';
    }
    case 'push': {
      const e = parse(PushEvent);
      if (!e) return 'invalid';
      const repo = await g.repository(e.repository, at(e.repository.pushed_at ?? e.head_commit?.timestamp));
      const commits = new Map(e.commits.map((c) => [c.id, c]));
      if (e.head_commit && !commits.has(e.head_commit.id)) commits.set(e.head_commit.id, e.head_commit);
      for (const c of commits.values()) {
        const v = at(c.timestamp);
        const commit = await w.node('codehost.commit', c.id, {
          identity: { sha: c.id },
          props: { message: c.message, timestamp: c.timestamp, url: c.url, author_name: c.author?.name },
          version: v,
        });
        await w.edge('pushed_to', commit, repo);
        const login = c.author?.username;
        if (login) await w.edge('authored_by', commit, await w.node('codehost.user', login, { identity: { login } }));
      }
      return 'projected';
    }
    default:
      return IGNORED_EVENTS.has(name) ? 'ignored' : 'unknown';
  }
}

function graphOf(w: GraphWriter) {
  const user = (u: User, v: Version) =>
    w.node('codehost.user', u.login, {
      identity: { login: u.login },
      props: { type: u.type, user_id: u.id, html_url: u.html_url },
      version: v,
    });

  const repository = (r: Repository, v: Version) =>
    w.node('codehost.repository', String(r.id), {
      identity: { repo_id: r.id },
      props: { full_name: r.full_name, html_url: r.html_url, private: r.private },
      version: v,
    });

  const pullRequest = async (r: Repository, pr: PullRequest, v: Version): Promise<NodeRef> => {
    const repo = await repository(r, v);
    const node = await w.node('codehost.pull_request', `${r.full_name}#${pr.number}`, {
      identity: { repo_full_name: r.full_name, number: pr.number },
      props: {
        title: pr.title,
        state: pr.state,
        body: pr.body ?? null,
        head_sha: pr.head.sha,
        head_ref: pr.head.ref,
        base_ref: pr.base?.ref,
        draft: pr.draft,
        merged: pr.merged ?? (pr.merged_at ? true : undefined),
        labels: labelNames(pr.labels),
        html_url: pr.html_url,
      },
      version: v,
    });
    await w.edge('in_repo', node, repo);
    if (pr.user) await w.edge('authored_by', node, await user(pr.user, v));
    return node;
  };

  /** An issue, or the pull request an `issue_comment` names through its `issue` object. */
  const issue = async (r: Repository, i: Issue, v: Version, deleted: boolean): Promise<NodeRef> => {
    const repo = await repository(r, v);
    const kind = i.pull_request ? 'codehost.pull_request' : 'codehost.issue';
    const props = deleted
      ? { deleted: true, title: null, body: null }
      : { title: i.title, state: i.state, body: i.body ?? null, labels: labelNames(i.labels), html_url: i.html_url };
    const node = await w.node(kind, `${r.full_name}#${i.number}`, {
      identity: { repo_full_name: r.full_name, number: i.number },
      props,
      version: v,
    });
    await w.edge('in_repo', node, repo);
    if (i.user) await w.edge('authored_by', node, await user(i.user, v));
    return node;
  };

  const comment = async (
    c: Comment,
    on: NodeRef,
    deleted: boolean,
    v: Version,
    extra: Record<string, unknown>,
  ): Promise<NodeRef> => {
    const props = deleted
      ? { ...extra, deleted: true, body: null }
      : { ...extra, body: c.body ?? '', html_url: c.html_url };
    const node = await w.node('codehost.comment', String(c.id), { identity: { comment_id: c.id }, props, version: v });
    await w.edge('comment_on', node, on);
    if (c.user) await w.edge('authored_by', node, await user(c.user, v));
    return node;
  };

  return { user, repository, pullRequest, issue, comment };
}
