/**
 * The backfill walker's view of the code host (spec §3.2): one method per upstream call,
 * so "exactly one upstream call per invocation" (spec §8) is visible in the types. The
 * real implementation is `octokit-api.ts`; tests use the fake GitHub over HTTP.
 *
 * Expected outcomes are values: a repo or PR that vanished is `{status: 'gone'}`, a diff
 * GitHub refuses with 406 is `{status: 'oversized'}` (spec §6.1 rule 3). Failures throw
 * AppErrors: `RateLimited` (403/429 secondary or primary limit, with `retryAfterS`), and
 * `UpstreamError` with the upstream status, which `isRetryable` (errors.ts) reads: 5xx and
 * network retryable; 4xx terminal, coded `installation_not_accessible` when the
 * installation itself refused, `upstream_forbidden` for a 403 on a repository.
 */

/** What the last response said about the installation's `github_general` budget. */
export interface RateObservation {
  /** `x-ratelimit-limit`: requests per hour for this installation. */
  limit: number;
  /** `x-ratelimit-remaining`. */
  remaining: number;
  /** `x-ratelimit-reset`, epoch ms. */
  resetAtMs: number;
}

export interface ListedRepo {
  id: number;
  full_name: string;
  clone_url: string;
  default_branch: string;
}

export interface Page<T> {
  items: T[];
  /** Another page follows (Link rel="next", or a full page when there is no Link header). */
  hasNext: boolean;
  rate: RateObservation | null;
}

/**
 * One pull request as the pulls listing gives it: what a backfilled PR node carries
 * (INTERFACE §9.5). `updated_at` orders it against live webhooks of the same PR.
 */
export interface ListedPull {
  number: number;
  title: string;
  state: string;
  body: string | null;
  head_sha: string;
  head_ref?: string;
  base_ref?: string;
  draft?: boolean;
  /** The listing has no `merged`; it is `merged_at !== null`. */
  merged: boolean;
  updated_at: string;
  html_url?: string;
  labels?: string[];
  user: { login: string; id?: number; type?: string; html_url?: string } | null;
}

export type PullsPage = ({ status: 'ok' } & Page<ListedPull>) | { status: 'gone'; rate: RateObservation | null };

export type DiffResult =
  | { status: 'ok'; diff: string; rate: RateObservation | null }
  | { status: 'oversized'; rate: RateObservation | null }
  | { status: 'gone'; rate: RateObservation | null };

export interface CodehostApi {
  /** `GET /installation/repositories?per_page=100&page={page}`. */
  listInstallationRepos(page: number, signal: AbortSignal): Promise<Page<ListedRepo>>;
  /** `GET /repos/{owner}/{repo}/pulls?state=all&per_page=100&page={page}`: PRs in listing order. */
  listPulls(repoFullName: string, page: number, signal: AbortSignal): Promise<PullsPage>;
  /** `GET /repos/{owner}/{repo}/pulls/{n}` with `Accept: application/vnd.github.v3.diff` (INTERFACE preamble). */
  getPullDiff(repoFullName: string, prNumber: number, signal: AbortSignal): Promise<DiffResult>;
}

export const PER_PAGE = 100;
