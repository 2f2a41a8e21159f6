/**
 * spec §6.1 rule 1: on `pull_request` opened / reopened / synchronize, create the summary
 * comment or edit the existing one in place. Runs as a durable effect of the event
 * (INTERFACE §9.4), serialised per PR (its serial key), so a PR's summaries are written one
 * after another; and only the installation's oldest active install acts (INTERFACE §8.7),
 * so concurrent or redelivered events never create a second comment.
 *
 * The comment is found again by its emitted-event record, or, when the record is lost
 * (a crash between the POST and the record), by the sentinel among the PR's comments.
 */
import type { Octokit } from '@octokit/rest';
import type pg from 'pg';
import { isRetryable, RateLimited } from '../../errors.js';
import type { DriverContext } from '../driver.js';
import type { IngestEvent, KvPort } from '../../runtime/ports.js';
import { findSummaryCommentId, forgetSummaryComment } from '../../store/codehost-emitted.js';
import { findActiveInstalls } from '../../store/installs.js';
import type { CodehostWrite } from './emit-schema.js';
import { installRefOf, type GithubClients, type InstallRef } from './github-client.js';
import type { WriteOutcome } from './perform-write.js';
import { renderPrSummary, type PrFile } from './pr-summary-body.js';
import { isRepoFullName } from './repo-full-name.js';
import { PR_SUMMARY_SENTINEL } from './sentinels.js';
import { toUpstreamError, upstreamStatusOf } from './upstream-error.js';

const PR_SUMMARY_KINDS = new Set(['pull_request.opened', 'pull_request.reopened', 'pull_request.synchronize']);
export const PR_SUMMARY_EFFECT = 'pr_summary';
/**
 * A rate-limit hold longer than this is not waited out by retrying the effect soon; the
 * summary waits for the next push.
 */
const RETRY_HOLD_MAX_S = 60;
/** Comments scanned for the sentinel when the record is lost (30 pages of 100). */
const SENTINEL_SCAN_PAGES = 30;

export interface PrSummaryDeps {
  pool: pg.Pool;
  clients: GithubClients;
  appId: number;
  /** Short-lived markers: a redelivery of a summarised delivery is not summarised again. */
  dedup: KvPort;
  /** One write through the installation's write actor (paced, serialised). */
  write(install: InstallRef, w: CodehostWrite, signal: AbortSignal): Promise<WriteOutcome>;
}

interface PullRequestPayload {
  number?: number;
  repository?: { full_name?: string };
  pull_request?: {
    number?: number;
    title?: string;
    user?: { login?: string } | null;
    commits?: number;
    additions?: number;
    deletions?: number;
    changed_files?: number;
    head?: { sha?: string };
  };
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The PR an event asks a summary for, or null (another kind, or no valid repository and number). */
export function prSummaryTarget(event: IngestEvent): { repoFullName: string; number: number } | null {
  if (!PR_SUMMARY_KINDS.has(event.kind)) return null;
  const p = event.payload as PullRequestPayload;
  const repoFullName = p.repository?.full_name;
  const number = num(p.pull_request?.number ?? p.number);
  // INTERFACE §9.3: only GitHub's own `owner/repo` shapes ever reach an upstream path.
  if (typeof repoFullName !== 'string' || !isRepoFullName(repoFullName) || number === null) return null;
  return { repoFullName, number };
}

/** The dedup-bucket key of a PR's summary: `codehost-summary.<install id>.<event id, hex>`. */
export const CODEHOST_SUMMARY_PREFIX = 'codehost-summary';

export async function summarisePullRequest(
  deps: PrSummaryDeps,
  ctx: DriverContext,
  event: IngestEvent,
  info: { inserted: boolean },
): Promise<void> {
  if (!PR_SUMMARY_KINDS.has(event.kind)) return;
  const { install, log, signal } = ctx;
  if (install.status !== 'active') return;
  const owners = await findActiveInstalls(deps.pool, 'codehost', install.external_id);
  if (owners[0]?.install_id !== install.install_id) return;

  const eventHex = Buffer.from(event.id).toString('hex').slice(0, 200);
  const marker = `${CODEHOST_SUMMARY_PREFIX}.${install.install_id}.${eventHex}`;
  if (!info.inserted && (await deps.dedup.get(marker).catch(() => null))) return;

  const p = event.payload as PullRequestPayload;
  const target = prSummaryTarget(event);
  if (target === null) {
    log.warn({ eventId: event.id }, 'pull_request event without a valid repository or number; no summary');
    return;
  }
  const { repoFullName, number } = target;
  const ref = installRefOf(install);
  const octokit = deps.clients.forInstall(ref);
  const [owner, repo] = repoFullName.split('/') as [string, string];
  try {
    const files = await listFiles(octokit, owner, repo, number, signal);
    const pr = p.pull_request ?? {};
    const body = renderPrSummary({
      title: typeof pr.title === 'string' ? pr.title : `#${number}`,
      author: pr.user?.login ?? null,
      commits: num(pr.commits),
      additions: num(pr.additions),
      deletions: num(pr.deletions),
      changedFiles: num(pr.changed_files),
      headSha: pr.head?.sha ?? null,
      files,
    });
    let existing = await findSummaryCommentId(deps.pool, install.install_id, repoFullName, number);
    existing ??= await findBySentinel(octokit, owner, repo, number, deps.appId, signal);
    const write = (id: string | null) =>
      deps.write(
        ref,
        {
          kind: 'codehost.pr_summary_comment',
          repo_full_name: repoFullName,
          pr_number: number,
          body,
          existing_comment_id: id === null ? null : Number(id),
        },
        signal,
      );
    try {
      await write(existing);
    } catch (err) {
      // Deleted by a person (404) or not ours to edit (403): a new comment takes its place.
      const status = upstreamStatusOf(err);
      if (existing === null || (status !== 404 && status !== 403)) throw err;
      log.info({ commentId: existing, status }, 'PR summary comment is gone or not editable; creating a new one');
      await forgetSummaryComment(deps.pool, install.install_id, repoFullName, number, existing);
      await write(null);
    }
    await deps.dedup
      .put(marker, new Uint8Array([1]))
      .catch((err: unknown) => log.debug({ err }, 'summary marker not stored'));
  } catch (err) {
    // A short rate-limit hold or a GitHub hiccup: throwing retries the effect later.
    const longHold = err instanceof RateLimited && (err.retryAfterS ?? 0) > RETRY_HOLD_MAX_S;
    if (isRetryable(toUpstreamError(err, 'the PR summary')) && !longHold) throw err;
    // Refused for good (no access, PR gone), or held too long to be worth retrying soon:
    // the next push of the PR brings the summary up to date.
    log.warn(
      { err: { code: (err as RateLimited).code, message: (err as Error).message }, repo: repoFullName, number },
      'PR summary comment not written',
    );
  }
}

async function listFiles(
  octokit: Octokit,
  owner: string,
  repo: string,
  pull: number,
  signal: AbortSignal,
): Promise<PrFile[]> {
  try {
    // One call (the first 100 files); the totals come from the PR itself.
    const { data } = await octokit.rest.pulls.listFiles({
      owner,
      repo,
      pull_number: pull,
      per_page: 100,
      request: { signal },
    });
    return data.map((f) => ({
      filename: f.filename,
      status: f.status,
      additions: f.additions,
      deletions: f.deletions,
      changes: f.changes,
      ...(typeof f.patch === 'string' ? { patch: f.patch } : {}),
    }));
  } catch (err) {
    throw toUpstreamError(err, 'list pull request files');
  }
}

/** Our own summary among the PR's comments: the sentinel, written by this App. */
async function findBySentinel(
  octokit: Octokit,
  owner: string,
  repo: string,
  issue: number,
  appId: number,
  signal: AbortSignal,
): Promise<string | null> {
  try {
    let pages = 0;
    const iterator = octokit.paginate.iterator(octokit.rest.issues.listComments, {
      owner,
      repo,
      issue_number: issue,
      per_page: 100,
      request: { signal },
    });
    for await (const { data } of iterator) {
      for (const c of data) {
        const byUs = c.performed_via_github_app ? c.performed_via_github_app.id === appId : c.user?.type === 'Bot';
        if (byUs && typeof c.body === 'string' && c.body.includes(PR_SUMMARY_SENTINEL)) return String(c.id);
      }
      if (++pages >= SENTINEL_SCAN_PAGES) break;
    }
    return null;
  } catch (err) {
    throw toUpstreamError(err, 'list issue comments');
  }
}
