/**
 * One outbound write to GitHub (spec §4.2) and its emitted-event record. The record is
 * written after the call succeeded; failing to write it is logged and never undoes the
 * call (spec §4.2). Receipts' provider ids follow INTERFACE §8.6.
 */
import type { Octokit } from '@octokit/rest';
import type { Logger } from '../../log.js';
import type { Queryable } from '../../store/db.js';
import { recordEmitted } from '../../store/emitted.js';
import type { CodehostWrite } from './emit-schema.js';
import type { InstallRef } from './github-client.js';
import { toUpstreamError } from './upstream-error.js';

export interface WriteOutcome {
  provider_id: string;
}

function split(repoFullName: string): { owner: string; repo: string } {
  const [owner, repo] = repoFullName.split('/') as [string, string];
  return { owner, repo };
}

interface Done {
  providerId: string;
  number: number;
  byActorLogin: string | null;
  /** The record's kind when it is not the write's (a review-thread reply is a review comment, for Tier 2). */
  recordAs?: string;
}

async function call(octokit: Octokit, w: CodehostWrite, signal: AbortSignal): Promise<Done> {
  const request = { signal };
  const { owner, repo } = split(w.repo_full_name);
  switch (w.kind) {
    case 'codehost.pr_summary_comment': {
      // spec §4.2: with existing_comment_id the comment is edited in place, else created.
      const { data } =
        w.existing_comment_id !== null
          ? await octokit.rest.issues.updateComment({
              owner,
              repo,
              comment_id: w.existing_comment_id,
              body: w.body,
              request,
            })
          : await octokit.rest.issues.createComment({ owner, repo, issue_number: w.pr_number, body: w.body, request });
      return { providerId: String(data.id), number: w.pr_number, byActorLogin: data.user?.login ?? null };
    }
    case 'codehost.issue_comment': {
      const { data } = await octokit.rest.issues.createComment({
        owner,
        repo,
        issue_number: w.issue_number,
        body: w.body,
        request,
      });
      return { providerId: String(data.id), number: w.issue_number, byActorLogin: data.user?.login ?? null };
    }
    case 'codehost.review_comment': {
      const { data } = await octokit.rest.pulls.createReviewComment({
        owner,
        repo,
        pull_number: w.pr_number,
        commit_id: w.commit_id,
        path: w.path,
        line: w.line,
        body: w.body,
        ...(w.side !== null ? { side: w.side } : {}),
        request,
      });
      return { providerId: String(data.id), number: w.pr_number, byActorLogin: data.user?.login ?? null };
    }
    case 'codehost.review_comment_reply': {
      const { data } = await octokit.rest.pulls.createReplyForReviewComment({
        owner,
        repo,
        pull_number: w.pr_number,
        comment_id: w.comment_id,
        body: w.body,
        request,
      });
      return {
        providerId: String(data.id),
        number: w.pr_number,
        byActorLogin: data.user?.login ?? null,
        recordAs: 'codehost.review_comment',
      };
    }
    case 'codehost.label': {
      await octokit.rest.issues.addLabels({ owner, repo, issue_number: w.issue_number, labels: w.labels, request });
      return { providerId: `${w.repo_full_name}#${w.issue_number}`, number: w.issue_number, byActorLogin: null };
    }
    case 'codehost.commit_status': {
      const { data } = await octokit.rest.repos.createCommitStatus({
        owner,
        repo,
        sha: w.sha,
        state: w.state,
        ...(w.target_url !== null ? { target_url: w.target_url } : {}),
        ...(w.description !== null ? { description: w.description } : {}),
        ...(w.context !== null ? { context: w.context } : {}),
        request,
      });
      return { providerId: String(data.id), number: 0, byActorLogin: data.creator?.login ?? null };
    }
  }
}

/** Performs the write; throws the classified upstream error (RateLimited, UpstreamError). */
export async function performWrite(
  octokit: Octokit,
  db: Queryable,
  install: InstallRef,
  w: CodehostWrite,
  opts: { signal: AbortSignal; log: Logger; idempotencyKey?: string },
): Promise<WriteOutcome> {
  const { signal, log } = opts;
  let done: Done;
  try {
    done = await call(octokit, w, signal);
  } catch (err) {
    throw toUpstreamError(err, w.kind);
  }
  try {
    await recordEmitted(db, {
      installId: install.installId,
      tenantId: install.tenantId,
      kind: done.recordAs ?? w.kind,
      repoFullName: w.repo_full_name,
      issueOrPrNumber: done.number,
      providerId: done.providerId,
      byActorLogin: done.byActorLogin,
      idempotencyKey: opts.idempotencyKey,
    });
  } catch (err) {
    // spec §4.2: the write happened; losing its record only weakens the Tier-2 filter.
    log.error(
      { err, kind: w.kind, providerId: done.providerId },
      'emitted-event record not written; the upstream write stands',
    );
  }
  return { provider_id: done.providerId };
}
