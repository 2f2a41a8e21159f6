/**
 * `CodehostApi` over Octokit, acting as the install's GitHub installation. One method,
 * one request: no pagination helper, no retry or throttling plugin (STYLE.md: pacing
 * belongs to the rate-gate actor). The diff is read as a stream and abandoned past
 * 1,000,000 bytes (INTERFACE §8.9), so a huge diff never sits in memory.
 *
 * Classification: `toUpstreamError` (upstream-error.ts) codes every failure, and
 * `isRetryable` (errors.ts) alone decides retry or terminal. On top, as values: 404/410 of
 * a repo or PR is `gone`; 406 of a diff is `oversized` (spec §6.1 rule 3). Terminal
 * failures get a code that names what refused: the installation itself (token mint or
 * listing) `installation_not_accessible`, a 403 on a repo `upstream_forbidden`.
 */
import type { Octokit } from '@octokit/rest';
import { AppError, ErrorCodes, isRetryable, UpstreamError } from '../../../errors.js';
import { describeUpstream, toUpstreamError } from '../upstream-error.js';
import { DIFF_MAX_BYTES } from './backfill-event.js';
import {
  PER_PAGE,
  type CodehostApi,
  type DiffResult,
  type ListedPull,
  type ListedRepo,
  type Page,
  type PullsPage,
  type RateObservation,
} from './codehost-api.js';

type Headers = Record<string, string | number | undefined>;

export function octokitApi(octokit: Octokit): CodehostApi {
  return {
    async listInstallationRepos(page, signal): Promise<Page<ListedRepo>> {
      try {
        const res = await octokit.request('GET /installation/repositories', {
          per_page: PER_PAGE,
          page,
          request: { signal },
        });
        const items = res.data.repositories.map((r) => ({
          id: Number(r.id),
          full_name: r.full_name,
          clone_url: r.clone_url,
          default_branch: r.default_branch,
        }));
        return { items, hasNext: hasNext(res.headers, items.length), rate: rateOf(res.headers) };
      } catch (err) {
        throw classify(err, 'list installation repositories', 'installation');
      }
    },

    async listPulls(repoFullName, page, signal): Promise<PullsPage> {
      const { owner, repo } = split(repoFullName);
      try {
        // Oldest first: PRs opened during the walk land on later pages instead of shifting earlier ones.
        const res = await octokit.request('GET /repos/{owner}/{repo}/pulls', {
          owner,
          repo,
          state: 'all',
          sort: 'created',
          direction: 'asc',
          per_page: PER_PAGE,
          page,
          request: { signal },
        });
        const items = res.data.map(toListedPull);
        return { status: 'ok', items, hasNext: hasNext(res.headers, items.length), rate: rateOf(res.headers) };
      } catch (err) {
        if (isGone(err)) return { status: 'gone', rate: rateOf(headersOf(err)) };
        throw classify(err, `list pulls of ${repoFullName}`, 'repo');
      }
    },

    async getPullDiff(repoFullName, prNumber, signal): Promise<DiffResult> {
      const { owner, repo } = split(repoFullName);
      try {
        const res = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
          owner,
          repo,
          pull_number: prNumber,
          mediaType: { format: 'diff' },
          request: { signal, parseSuccessResponseBody: false },
        });
        const rate = rateOf(res.headers);
        const text = await readCapped(res.data as unknown as ReadableStream<Uint8Array> | null, DIFF_MAX_BYTES);
        return text === null ? { status: 'oversized', rate } : { status: 'ok', diff: text, rate };
      } catch (err) {
        const status = describeUpstream(err).status;
        if (status === 406) return { status: 'oversized', rate: rateOf(headersOf(err)) };
        if (isGone(err)) return { status: 'gone', rate: rateOf(headersOf(err)) };
        throw classify(err, `get the diff of ${repoFullName}#${prNumber}`, 'repo');
      }
    },
  };
}

/** The fields of a pulls-listing item read here (Octokit's own type, narrowed). */
interface PullItem {
  number: number;
  title: string;
  state: string;
  body?: string | null;
  head: { sha: string; ref: string };
  base?: { ref: string };
  draft?: boolean;
  merged_at: string | null;
  updated_at: string;
  html_url: string;
  labels?: Array<{ name?: string }>;
  user: { login: string; id: number | bigint; type: string; html_url: string } | null;
}

function toListedPull(p: PullItem): ListedPull {
  return {
    number: p.number,
    title: p.title,
    state: p.state,
    body: p.body ?? null,
    head_sha: p.head.sha,
    head_ref: p.head.ref,
    base_ref: p.base?.ref,
    draft: p.draft,
    merged: p.merged_at != null,
    updated_at: p.updated_at,
    html_url: p.html_url,
    labels: p.labels?.map((l) => l.name ?? '').filter((n) => n.length > 0),
    user: p.user ? { login: p.user.login, id: Number(p.user.id), type: p.user.type, html_url: p.user.html_url } : null,
  };
}

function split(fullName: string): { owner: string; repo: string } {
  const i = fullName.indexOf('/');
  return { owner: fullName.slice(0, i), repo: fullName.slice(i + 1) };
}

/** The body, or null once it passes `max` bytes (the rest is never read). */
async function readCapped(body: ReadableStream<Uint8Array> | string | null, max: number): Promise<string | null> {
  if (body === null) return '';
  if (typeof body === 'string') return Buffer.byteLength(body, 'utf8') > max ? null : body;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function headersOf(err: unknown): Headers {
  return ((err as { response?: { headers?: Headers } })?.response?.headers ?? {}) as Headers;
}

/** `x-ratelimit-*` of a response; null when absent or unreadable. */
function rateOf(h: Headers): RateObservation | null {
  const limit = Number(h['x-ratelimit-limit']);
  const remaining = Number(h['x-ratelimit-remaining']);
  const reset = Number(h['x-ratelimit-reset']);
  if (
    !Number.isFinite(limit) ||
    !Number.isFinite(remaining) ||
    !Number.isFinite(reset) ||
    h['x-ratelimit-limit'] === undefined
  )
    return null;
  return { limit, remaining, resetAtMs: reset * 1000 };
}

/** Link rel="next" decides; without a Link header (a single page), a full page may have a successor. */
function hasNext(h: Headers, count: number): boolean {
  const link = h.link;
  if (typeof link === 'string') return /rel="next"/.test(link);
  return count >= PER_PAGE;
}

function isGone(err: unknown): boolean {
  if (aboutInstallation(err)) return false;
  const s = describeUpstream(err).status;
  return s === 404 || s === 410;
}

/** The failure came from minting the installation token (the installation itself refused). */
function aboutInstallation(err: unknown): boolean {
  const url = (err as { request?: { url?: unknown } })?.request?.url;
  return typeof url === 'string' && /\/app\/installations\/\d+\/access_tokens/.test(url);
}

function classify(err: unknown, what: string, scope: 'installation' | 'repo'): AppError {
  if (err instanceof AppError) return err;
  const coded = toUpstreamError(err, what);
  if (isRetryable(coded)) return coded;
  const { status, message } = describeUpstream(err);
  const details = { upstream_status: status };
  if (scope === 'installation' || aboutInstallation(err))
    return new UpstreamError(`the GitHub installation refused ${what}: ${message}`, {
      code: ErrorCodes.installationNotAccessible,
      details,
      cause: err,
    });
  if (status === 403)
    return new UpstreamError(`GitHub refused ${what}: ${message}`, {
      code: ErrorCodes.upstreamForbidden,
      details,
      cause: err,
    });
  return coded;
}
