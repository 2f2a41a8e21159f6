/**
 * A fake GitHub REST API at the HTTP boundary: the real Octokit (and @octokit/auth-app)
 * talk to it through CODEHOST_API_URL. It checks App JWTs (RS256, `iss`), mints and checks
 * installation tokens, serves the endpoints the code-host connector uses with GitHub's
 * JSON shapes and status codes, records every call, and has switches for failures
 * (401/404/5xx, a secondary rate limit with or without `retry-after`, fresh tokens that
 * answer 401 for a moment as GitHub's replication delay does).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeHooks } from './github-hooks.js';
import { checkAppJwt } from './github-jwt.js';
import { newPullsState, pullRoutes, type PullsState } from './github-pulls.js';
import { repoRoutes, type Reply, type RepoState } from './github-repos.js';

export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  auth: 'jwt' | 'token' | 'none';
  token: string | null;
  body: unknown;
  at: number;
  /** The status answered; absent while the request is under way. */
  status?: number;
}

export interface FakeInstallation {
  id: number;
  account: { login: string; type: string };
  repository_selection: string;
  suspended: boolean;
}

export interface FailRule {
  method?: string;
  path: RegExp;
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** How many matching requests fail; default 1. */
  times?: number;
}

interface Token {
  installationId: number;
  createdAt: number;
  expiresAt: number;
}

export class FakeGitHub {
  readonly calls: RecordedCall[] = [];
  readonly installations = new Map<number, FakeInstallation>();
  readonly tokens = new Map<string, Token>();
  readonly repos: RepoState = {
    comments: new Map(),
    reviewComments: new Map(),
    labels: new Map(),
    statuses: [],
    prFiles: new Map(),
    nextId: 0,
  };
  /** The backfill endpoints' data: repos per installation, their pulls and diffs (github-pulls.ts). */
  readonly pulls: PullsState = newPullsState();
  /** The App's webhook sender and delivery log (github-hooks.ts). */
  readonly hooks = new FakeHooks();
  /** A token younger than this answers 401 (GitHub's token replication delay). */
  freshTokenUnauthorizedMs = 0;
  /**
   * Awaited after `DELETE /installation/token` revoked a token and before it is answered:
   * the window between GitHub's revoke and what the caller does once it returns.
   */
  holdRevokeAnswer: (() => Promise<void>) | null = null;
  /**
   * Called once a call is routed (its write done) and before it is answered: lets a test make
   * something happen between the platform's write and the caller hearing of it.
   */
  beforeAnswer: ((call: RecordedCall) => void) | null = null;
  /** Lifetime of minted tokens. */
  tokenTtlMs = 60 * 60_000;
  private readonly failures: Array<FailRule & { left: number }> = [];
  private server: Server | null = null;
  url = '';

  constructor(
    readonly appId: number,
    private readonly publicKeyPem: string,
    readonly slug = 'service-app',
  ) {
    this.repos.nextId = 1_000_000 + Math.floor(Math.random() * 1_000_000) * 100;
  }

  static async start(appId: number, publicKeyPem: string): Promise<FakeGitHub> {
    const gh = new FakeGitHub(appId, publicKeyPem);
    gh.server = createServer((req, res) => void gh.handle(req, res));
    await new Promise<void>((resolve) => gh.server!.listen(0, '127.0.0.1', resolve));
    gh.url = `http://127.0.0.1:${(gh.server!.address() as AddressInfo).port}`;
    return gh;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  addInstallation(id: number, login = `org-${id}`, type = 'Organization'): FakeInstallation {
    const inst = { id, account: { login, type }, repository_selection: 'all', suspended: false };
    this.installations.set(id, inst);
    return inst;
  }

  fail(rule: FailRule): void {
    this.failures.push({ ...rule, left: rule.times ?? 1 });
  }

  /** Drop every failure rule still armed (a timed outage ends). */
  clearFailures(): void {
    this.failures.length = 0;
  }

  callsTo(method: string, path: RegExp): RecordedCall[] {
    return this.calls.filter((c) => c.method === method && path.test(c.path));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      return send(res, { status: 400, body: { message: 'Problems parsing JSON' } });
    }
    const authz = req.headers.authorization ?? '';
    const [scheme, credential] = authz.split(' ');
    const auth =
      /^bearer$/i.test(scheme ?? '') && credential?.includes('.')
        ? 'jwt'
        : /^(token|bearer)$/i.test(scheme ?? '')
          ? 'token'
          : 'none';
    const method = req.method ?? 'GET';
    const call: RecordedCall = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      auth,
      token: auth === 'token' ? (credential ?? null) : null,
      body,
      at: Date.now(),
    };
    this.calls.push(call);

    const rule = this.failures.find(
      (f) => f.left > 0 && (!f.method || f.method === method) && f.path.test(url.pathname),
    );
    if (rule) {
      rule.left--;
      call.status = rule.status;
      return send(res, {
        status: rule.status,
        body: rule.body ?? { message: `fake failure ${rule.status}` },
        headers: rule.headers,
      });
    }
    if (
      this.pulls.delayMs > 0 &&
      pullRoutes(this.pulls, { method, url, accept: '', installationId: -1, baseUrl: this.url }) !== null
    ) {
      await new Promise((r) => setTimeout(r, this.pulls.delayMs));
    }
    const reply = this.route(method, url, auth, credential ?? '', body, String(req.headers.accept ?? ''));
    call.status = reply.status;
    if (method === 'DELETE' && url.pathname === '/installation/token' && reply.status === 204) {
      await this.holdRevokeAnswer?.();
    }
    this.beforeAnswer?.(call);
    send(res, reply);
  }

  private route(
    method: string,
    url: URL,
    auth: RecordedCall['auth'],
    credential: string,
    body: unknown,
    accept = '',
  ): Reply {
    const path = url.pathname;
    if (path === '/app' || path.startsWith('/app/')) {
      const problem =
        auth === 'jwt'
          ? checkAppJwt(credential, this.appId, this.publicKeyPem)
          : 'A JSON web token could not be decoded';
      if (problem)
        return { status: 401, body: { message: problem, documentation_url: 'https://docs.github.com/rest' } };
      const hook = this.hooks.route(method, url, this.url);
      if (hook) return hook;
      if (method === 'GET' && path === '/app') {
        return {
          status: 200,
          body: {
            id: this.appId,
            slug: this.slug,
            name: 'Service App',
            owner: { login: 'service', type: 'Organization' },
          },
        };
      }
      const m = /^\/app\/installations\/(\d+)(\/access_tokens)?$/.exec(path);
      const inst = m ? this.installations.get(Number(m[1])) : undefined;
      if (!m || !inst) return { status: 404, body: { message: 'Not Found' } };
      if (method === 'GET' && !m[2]) {
        return {
          status: 200,
          body: {
            id: inst.id,
            account: inst.account,
            app_id: this.appId,
            target_type: inst.account.type,
            repository_selection: inst.repository_selection,
            suspended_at: inst.suspended ? new Date().toISOString() : null,
          },
        };
      }
      if (method === 'POST' && m[2]) {
        if (inst.suspended) return { status: 403, body: { message: 'This installation has been suspended' } };
        const token = `ghs_${randomBytes(18).toString('base64url')}`;
        const expiresAt = Date.now() + this.tokenTtlMs;
        this.tokens.set(token, { installationId: inst.id, createdAt: Date.now(), expiresAt });
        return {
          status: 201,
          body: {
            token,
            expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
            permissions: { issues: 'write', pull_requests: 'write', statuses: 'write', contents: 'read' },
            repository_selection: inst.repository_selection,
          },
        };
      }
      return { status: 404, body: { message: 'Not Found' } };
    }

    const t = auth === 'token' ? this.tokens.get(credential) : undefined;
    const inst = t ? this.installations.get(t.installationId) : undefined;
    if (
      !t ||
      t.expiresAt <= Date.now() ||
      !inst ||
      inst.suspended ||
      Date.now() - t.createdAt < this.freshTokenUnauthorizedMs
    ) {
      return { status: 401, body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' } };
    }
    if (method === 'DELETE' && path === '/installation/token') {
      this.tokens.delete(credential);
      return { status: 204, body: null };
    }
    return (
      pullRoutes(this.pulls, { method, url, accept, installationId: inst.id, baseUrl: this.url }) ??
      repoRoutes(this.repos, { method, url, body, baseUrl: this.url, app: { id: this.appId, slug: this.slug } })
    );
  }
}

function send(res: ServerResponse, r: Reply): void {
  const headers: Record<string, string> = {
    'x-github-request-id': randomBytes(6).toString('hex').toUpperCase(),
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': '4999',
    ...(r.headers ?? {}),
  };
  if (r.status === 204 || r.body === null) {
    res.writeHead(r.status, headers).end();
    return;
  }
  // A text body with its own content type (a PR diff) goes out as is.
  if (typeof r.body === 'string' && headers['content-type'] !== undefined) {
    res.writeHead(r.status, headers).end(r.body);
    return;
  }
  res
    .writeHead(r.status, { ...headers, 'content-type': 'application/json; charset=utf-8' })
    .end(JSON.stringify(r.body));
}
