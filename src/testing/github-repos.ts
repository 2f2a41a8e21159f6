/**
 * The repository endpoints of the fake GitHub (see github.ts): issue comments (create,
 * edit, list with Link pagination), review comments (create, reply in a thread, list with
 * `since`), labels, commit statuses and the PR files list, with GitHub's shapes and its
 * 404 / 422 answers.
 */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string> | undefined;
}

export interface FakeComment {
  id: number;
  repo: string;
  issue_number: number;
  body: string;
  user: { login: string; type: string };
  performed_via_github_app: { id: number; slug: string } | null;
  created_at: string;
  updated_at: string;
}

/** A PR review comment; replies carry `in_reply_to_id` (their thread's first comment). */
export interface FakeReviewComment {
  id: number;
  repo: string;
  pull_number: number;
  body: string;
  in_reply_to_id?: number;
  user: { login: string; type: string };
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

/** A person's review comment, as if posted on GitHub (a webhook test then delivers its event). */
export function seedReviewComment(
  s: RepoState,
  c: { id: number; repo: string; pull_number: number; body: string; in_reply_to_id?: number },
): FakeReviewComment {
  const now = new Date().toISOString();
  const comment: FakeReviewComment = {
    ...c,
    path: 'README.md',
    line: 1,
    side: 'RIGHT',
    user: { login: 'octocat', type: 'User' },
    created_at: now,
    updated_at: now,
  };
  s.reviewComments.set(c.id, comment);
  return comment;
}

export interface FakeFile {
  filename: string;
  status: string;
  additions: number;
  deletions: number;
  changes: number;
  patch?: string;
}

export interface RepoState {
  comments: Map<number, FakeComment>;
  reviewComments: Map<number, FakeReviewComment>;
  labels: Map<string, string[]>;
  statuses: Array<Record<string, unknown>>;
  prFiles: Map<string, FakeFile[]>;
  nextId: number;
}

interface Req {
  method: string;
  url: URL;
  body: unknown;
  baseUrl: string;
  app: { id: number; slug: string };
}

const notFound: Reply = {
  status: 404,
  body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' },
};
const invalid = (field: string, code = 'missing_field'): Reply => ({
  status: 422,
  body: {
    message: 'Validation Failed',
    errors: [{ resource: 'Issue', code, field }],
    documentation_url: 'https://docs.github.com/rest',
  },
});

function page<T>(items: T[], req: Req): Reply {
  const perPage = Math.min(100, Number(req.url.searchParams.get('per_page') ?? 30));
  const n = Math.max(1, Number(req.url.searchParams.get('page') ?? 1));
  const slice = items.slice((n - 1) * perPage, n * perPage);
  const headers: Record<string, string> = {};
  if (n * perPage < items.length) {
    const next = new URL(req.url.pathname, req.baseUrl);
    next.searchParams.set('per_page', String(perPage));
    next.searchParams.set('page', String(n + 1));
    headers.link = `<${next.toString()}>; rel="next"`;
  }
  return { status: 200, body: slice, headers };
}

export function repoRoutes(s: RepoState, req: Req): Reply {
  const { method, body } = req;
  const b = (body ?? {}) as Record<string, unknown>;
  const path = req.url.pathname;
  const bot = { login: `${req.app.slug}[bot]`, type: 'Bot' };
  const now = new Date().toISOString();
  let m: RegExpExecArray | null;

  if ((m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(path))) {
    const [repo, issue] = [m[1]!, Number(m[2])];
    if (method === 'GET')
      return page(
        [...s.comments.values()].filter((c) => c.repo === repo && c.issue_number === issue).sort((x, y) => x.id - y.id),
        req,
      );
    if (method !== 'POST') return notFound;
    if (typeof b.body !== 'string' || b.body.length === 0) return invalid('body');
    if (b.body.length > 65_536) return invalid('body', 'custom');
    const c: FakeComment = {
      id: ++s.nextId,
      repo,
      issue_number: issue,
      body: b.body,
      user: bot,
      performed_via_github_app: { id: req.app.id, slug: req.app.slug },
      created_at: now,
      updated_at: now,
    };
    s.comments.set(c.id, c);
    return { status: 201, body: { ...c, html_url: `https://github.com/${repo}/issues/${issue}#issuecomment-${c.id}` } };
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/issues\/comments\/(\d+)$/.exec(path))) {
    const c = s.comments.get(Number(m[2]));
    if (!c || c.repo !== m[1] || method !== 'PATCH') return notFound;
    if (typeof b.body !== 'string' || b.body.length === 0) return invalid('body');
    if (b.body.length > 65_536) return invalid('body', 'custom');
    Object.assign(c, { body: b.body, updated_at: now });
    return { status: 200, body: c };
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/comments$/.exec(path)) && method === 'POST') {
    for (const f of ['body', 'commit_id', 'path', 'line'] as const) if (b[f] === undefined) return invalid(f);
    if (b.side !== undefined && b.side !== 'LEFT' && b.side !== 'RIGHT') return invalid('side', 'invalid');
    const c: FakeReviewComment = {
      id: ++s.nextId,
      repo: m[1]!,
      pull_number: Number(m[2]),
      pull_request_url: `${req.baseUrl}/repos/${m[1]}/pulls/${m[2]}`,
      body: String(b.body),
      commit_id: b.commit_id,
      path: b.path,
      line: b.line,
      side: b.side ?? 'RIGHT',
      user: bot,
      created_at: now,
      updated_at: now,
    };
    s.reviewComments.set(c.id, c);
    return { status: 201, body: c };
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/comments$/.exec(path)) && method === 'GET') {
    // GitHub's `since` filters on updated_at.
    const since = req.url.searchParams.get('since');
    const all = [...s.reviewComments.values()].filter(
      (c) => c.repo === m![1] && c.pull_number === Number(m![2]) && (since === null || c.updated_at >= since),
    );
    return page(
      all.sort((x, y) => x.id - y.id),
      req,
    );
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/comments\/(\d+)\/replies$/.exec(path)) && method === 'POST') {
    const parent = s.reviewComments.get(Number(m[3]));
    if (!parent || parent.repo !== m[1] || parent.pull_number !== Number(m[2])) return notFound;
    if (typeof b.body !== 'string' || b.body.length === 0) return invalid('body');
    if (b.body.length > 65_536) return invalid('body', 'custom');
    const c: FakeReviewComment = {
      id: ++s.nextId,
      repo: parent.repo,
      pull_number: parent.pull_number,
      pull_request_url: `${req.baseUrl}/repos/${m[1]}/pulls/${m[2]}`,
      body: b.body,
      // A reply to a reply joins the same thread (GitHub threads hang off their first comment).
      in_reply_to_id: parent.in_reply_to_id ?? parent.id,
      path: parent.path,
      line: parent.line,
      side: parent.side,
      user: bot,
      created_at: now,
      updated_at: now,
    };
    s.reviewComments.set(c.id, c);
    return { status: 201, body: c };
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/labels$/.exec(path)) && method === 'POST') {
    if (!Array.isArray(b.labels) || b.labels.length === 0) return invalid('labels');
    const key = `${m[1]}#${m[2]}`;
    const all = [...new Set([...(s.labels.get(key) ?? []), ...(b.labels as string[])])];
    s.labels.set(key, all);
    return { status: 200, body: all.map((name, i) => ({ id: i + 1, name, color: 'ededed', default: false })) };
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/statuses\/([0-9a-f]+)$/.exec(path)) && method === 'POST') {
    if (!['error', 'failure', 'pending', 'success'].includes(String(b.state))) return invalid('state', 'invalid');
    const st = {
      id: ++s.nextId,
      repo: m[1],
      sha: m[2],
      state: b.state,
      target_url: b.target_url ?? null,
      description: b.description ?? null,
      context: b.context ?? 'default',
      creator: bot,
      created_at: now,
      updated_at: now,
    };
    s.statuses.push(st);
    return { status: 201, body: st };
  }
  if ((m = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/files$/.exec(path)) && method === 'GET') {
    const files = s.prFiles.get(`${m[1]}#${m[2]}`);
    return files
      ? page(
          files.map((f) => ({ sha: 'f'.repeat(40), ...f })),
          req,
        )
      : notFound;
  }
  return notFound;
}
