/**
 * The backfill endpoints of the fake GitHub (see github.ts): the installation's repository
 * listing, a repo's pulls listing and one pull request as a diff (`Accept:
 * application/vnd.github.v3.diff`), with GitHub's shapes, Link pagination, rate-limit
 * headers and its 406 for a diff too large to render.
 */
import type { Reply } from './github-repos.js';

export interface FakePull {
  number: number;
  title: string;
  /** The diff text, or null for a PR whose diff GitHub refuses with 406. */
  diff: string | null;
  /** Listing fields (GitHub's names); defaults: an open PR by `octocat`, updated 2026-01-01. */
  body?: string | null;
  state?: 'open' | 'closed';
  merged_at?: string | null;
  draft?: boolean;
  updated_at?: string;
  head_sha?: string;
  user?: { login: string; id: number };
}

export interface FakeRepo {
  id: number;
  full_name: string;
  default_branch: string;
  pulls: FakePull[];
  /** Answers 404 from now on (deleted, or removed from the installation). */
  gone?: boolean;
}

export interface PullsState {
  /** Repos per installation id, in listing order. */
  repos: Map<number, FakeRepo[]>;
  /** Sent as x-ratelimit-* on these endpoints (reset as epoch seconds). */
  rate: { limit: number; remaining: number; resetS: number };
  /** Wait this long before answering one of these endpoints (to slow a walk down). */
  delayMs: number;
}

export function newPullsState(): PullsState {
  return {
    repos: new Map(),
    rate: { limit: 5000, remaining: 4999, resetS: Math.floor(Date.now() / 1000) + 3600 },
    delayMs: 0,
  };
}

interface Req {
  method: string;
  url: URL;
  accept: string;
  installationId: number;
  baseUrl: string;
}

const notFound: Reply = {
  status: 404,
  body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' },
};

/** The reply for a backfill endpoint, or null when the request is not one (github.ts goes on). */
export function pullRoutes(s: PullsState, req: Req): Reply | null {
  const path = req.url.pathname;
  if (req.method !== 'GET') return null;
  const rate = {
    'x-ratelimit-limit': String(s.rate.limit),
    'x-ratelimit-remaining': String(s.rate.remaining),
    'x-ratelimit-reset': String(s.rate.resetS),
  };
  const mine = s.repos.get(req.installationId) ?? [];
  if (path === '/installation/repositories') {
    const listed = mine.filter((r) => !r.gone);
    const p = paginate(listed, req);
    return {
      status: 200,
      body: {
        total_count: listed.length,
        repository_selection: 'all',
        repositories: p.items.map((r) => repoJson(r, req.baseUrl)),
      },
      headers: { ...rate, ...p.headers },
    };
  }
  let m = /^\/repos\/([^/]+\/[^/]+)\/pulls$/.exec(path);
  if (m) {
    const repo = mine.find((r) => r.full_name === m![1] && !r.gone);
    if (!repo) return { ...notFound, headers: rate };
    // state=all, sort=created: oldest first with direction=asc, newest first otherwise (GitHub's default).
    const asc = req.url.searchParams.get('direction') === 'asc';
    const pulls = [...repo.pulls].sort((a, b) => (asc ? a.number - b.number : b.number - a.number));
    const p = paginate(pulls, req);
    return {
      status: 200,
      body: p.items.map((pr) => pullJson(repo, pr, req.baseUrl)),
      headers: { ...rate, ...p.headers },
    };
  }
  m = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/.exec(path);
  if (m) {
    const repo = mine.find((r) => r.full_name === m![1] && !r.gone);
    const pr = repo?.pulls.find((p) => p.number === Number(m![2]));
    if (!repo || !pr) return { ...notFound, headers: rate };
    if (!req.accept.includes('application/vnd.github.v3.diff'))
      return { status: 200, body: pullJson(repo, pr, req.baseUrl), headers: rate };
    if (pr.diff === null) {
      return {
        status: 406,
        body: {
          message:
            "Sorry, the diff exceeded the maximum number of files (300). Consider using 'List pull requests files' " +
            'API or locally cloning the repository instead.',
          errors: [{ resource: 'PullRequest', field: 'diff', code: 'too_large' }],
          documentation_url: 'https://docs.github.com/rest/pulls/pulls#list-pull-requests-files',
        },
        headers: rate,
      };
    }
    return { status: 200, body: pr.diff, headers: { ...rate, 'content-type': 'text/plain; charset=utf-8' } };
  }
  return null;
}

function paginate<T>(items: T[], req: Req): { items: T[]; headers: Record<string, string> } {
  const perPage = Math.min(100, Number(req.url.searchParams.get('per_page') ?? 30));
  const n = Math.max(1, Number(req.url.searchParams.get('page') ?? 1));
  const headers: Record<string, string> = {};
  const link = (page: number, rel: string) => {
    const u = new URL(req.url.pathname, req.baseUrl);
    for (const [k, v] of req.url.searchParams) if (k !== 'page') u.searchParams.set(k, v);
    u.searchParams.set('page', String(page));
    return `<${u.toString()}>; rel="${rel}"`;
  };
  const last = Math.max(1, Math.ceil(items.length / perPage));
  if (n < last) headers.link = [link(n + 1, 'next'), link(last, 'last')].join(', ');
  return { items: items.slice((n - 1) * perPage, n * perPage), headers };
}

function repoJson(r: FakeRepo, baseUrl: string): Record<string, unknown> {
  const [owner, name] = r.full_name.split('/') as [string, string];
  return {
    id: r.id,
    node_id: `R_${r.id}`,
    name,
    full_name: r.full_name,
    private: true,
    owner: { login: owner, id: 1, type: 'Organization' },
    html_url: `https://github.com/${r.full_name}`,
    url: `${baseUrl}/repos/${r.full_name}`,
    clone_url: `https://github.com/${r.full_name}.git`,
    default_branch: r.default_branch,
  };
}

function pullJson(repo: FakeRepo, pr: FakePull, baseUrl: string): Record<string, unknown> {
  const user = pr.user ?? { login: 'octocat', id: 583231 };
  return {
    id: repo.id * 100_000 + pr.number,
    number: pr.number,
    state: pr.state ?? 'open',
    locked: false,
    title: pr.title,
    body: pr.body ?? null,
    url: `${baseUrl}/repos/${repo.full_name}/pulls/${pr.number}`,
    html_url: `https://github.com/${repo.full_name}/pull/${pr.number}`,
    user: {
      login: user.login,
      id: user.id,
      type: 'User',
      html_url: `https://github.com/${user.login}`,
    },
    labels: [],
    created_at: '2026-01-01T00:00:00Z',
    updated_at: pr.updated_at ?? '2026-01-01T00:00:00Z',
    closed_at: pr.state === 'closed' ? (pr.updated_at ?? '2026-01-01T00:00:00Z') : null,
    merged_at: pr.merged_at ?? null,
    draft: pr.draft ?? false,
    head: { sha: pr.head_sha ?? 'b'.repeat(40), ref: `feature-${pr.number}` },
    base: { ref: repo.default_branch, repo: { id: repo.id, full_name: repo.full_name } },
  };
}

/**
 * Seeds an installation's repos: `prs[i]` pull requests in repo i; PR numbers divisible by 5 answer 406, by 7 a diff
 * over 1 MB.
 */
export function seedRepos(
  s: PullsState,
  installationId: number,
  owner: string,
  prs: number[],
  firstId = 500_000,
): FakeRepo[] {
  const repos = prs.map((count, i) => ({
    id: firstId + i,
    full_name: `${owner}/repo-${i}`,
    default_branch: 'main',
    pulls: Array.from({ length: count }, (_, k) => {
      const number = k + 1;
      const diff =
        number % 5 === 0
          ? null
          : number % 7 === 0
            ? `+${'é'.repeat(500_001)}\n`
            : `diff --git a/f${number} b/f${number}\n+line ${number}\n`;
      return { number, title: `PR ${number}`, diff };
    }),
  }));
  s.repos.set(installationId, [...(s.repos.get(installationId) ?? []), ...repos]);
  return repos;
}
