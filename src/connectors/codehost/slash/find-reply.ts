/**
 * Whether our reply to a slash command is already on the issue (answer-slash.ts: a
 * redelivery whose reply record was lost). Looks at comments updated since the command
 * was posted for the reply's hidden marker, written by this App.
 */
import type { Octokit } from '@octokit/rest';
import { toUpstreamError } from '../upstream-error.js';

/** Comments scanned (10 pages of 100): replies come right after their command. */
const SCAN_PAGES = 10;

export async function replyExists(
  octokit: Octokit,
  appId: number,
  repoFullName: string,
  issueNumber: number,
  marker: string,
  since: string | null,
  signal: AbortSignal,
): Promise<boolean> {
  const i = repoFullName.indexOf('/');
  const [owner, repo] = [repoFullName.slice(0, i), repoFullName.slice(i + 1)];
  try {
    let pages = 0;
    const iterator = octokit.paginate.iterator(octokit.rest.issues.listComments, {
      owner,
      repo,
      issue_number: issueNumber,
      per_page: 100,
      ...(since ? { since } : {}),
      request: { signal },
    });
    for await (const { data } of iterator) {
      for (const c of data) {
        const byUs = c.performed_via_github_app ? c.performed_via_github_app.id === appId : c.user?.type === 'Bot';
        if (byUs && typeof c.body === 'string' && c.body.includes(marker)) return true;
      }
      if (++pages >= SCAN_PAGES) break;
    }
    return false;
  } catch (err) {
    throw toUpstreamError(err, 'list issue comments');
  }
}
