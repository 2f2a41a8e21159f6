/**
 * Whether our reply to a slash command is already there (answer-slash.ts: a redelivery
 * whose reply record was lost). Looks at the comments updated since the command was posted
 * (the issue's conversation, or the PR's review comments for a command in a review thread)
 * for the reply's hidden marker, written by this App.
 */
import type { Octokit } from '@octokit/rest';
import { toUpstreamError } from '../upstream-error.js';

/** Where a reply goes: an issue's (or PR's) conversation, or a PR's review comments. */
export interface ReplyPlace {
  repo_full_name: string;
  number: number;
  in: 'issue' | 'review_comments';
}

/** Comments scanned (10 pages of 100): replies come right after their command. */
const SCAN_PAGES = 10;

interface ListedComment {
  body?: string | null;
  user?: { type?: string } | null;
  performed_via_github_app?: { id?: number } | null;
}

export async function replyExists(
  octokit: Octokit,
  appId: number,
  place: ReplyPlace,
  marker: string,
  since: string | null,
  signal: AbortSignal,
): Promise<boolean> {
  const i = place.repo_full_name.indexOf('/');
  const [owner, repo] = [place.repo_full_name.slice(0, i), place.repo_full_name.slice(i + 1)];
  const common = { owner, repo, per_page: 100, ...(since ? { since } : {}), request: { signal } };
  try {
    let pages = 0;
    const iterator: AsyncIterable<{ data: ListedComment[] }> =
      place.in === 'issue'
        ? octokit.paginate.iterator(octokit.rest.issues.listComments, { ...common, issue_number: place.number })
        : octokit.paginate.iterator(octokit.rest.pulls.listReviewComments, { ...common, pull_number: place.number });
    for await (const { data } of iterator) {
      for (const c of data) {
        const byUs = c.performed_via_github_app ? c.performed_via_github_app.id === appId : c.user?.type === 'Bot';
        if (byUs && typeof c.body === 'string' && c.body.includes(marker)) return true;
      }
      if (++pages >= SCAN_PAGES) break;
    }
    return false;
  } catch (err) {
    throw toUpstreamError(err, place.in === 'issue' ? 'list issue comments' : 'list review comments');
  }
}
