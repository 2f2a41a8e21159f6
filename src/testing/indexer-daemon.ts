/**
 * A fake code-indexer daemon speaking INTERFACE §6: JSON-RPC 2.0 over HTTP POST on any
 * path (so the URL template's `{install}/{repo}` placement can be checked from the
 * recorded path), the four slash-command tools in the MCP `tools/call` shape, and the
 * index lifecycle: `index/sync` starts an index that `index/status` reports as `indexing`
 * for `indexingPolls` polls, then `ready` at the synced sha. Switches make it answer a
 * JSON-RPC error, an MCP `isError` result, an HTTP status, a redirect, or answer late.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DaemonCall {
  path: string;
  method: string;
  params: Record<string, unknown>;
  at: number;
}

interface RepoIndex {
  status: 'indexing' | 'ready' | 'failed';
  sha: string | null;
  pollsLeft: number;
  lastIndexedSha: string | null;
}

export interface DaemonSwitches {
  /** JSON-RPC error for every call of these methods (e.g. 'tools/call'). */
  rpcError: { methods: string[]; code: number; message: string } | null;
  /** tools/call answers `{isError: true}` with this text. */
  toolError: string | null;
  /** Answer this HTTP status (with an empty body) instead. */
  httpStatus: number | null;
  /** Answer 302 to this location instead. */
  redirectTo: string | null;
  /** Wait this long before answering. */
  delayMs: number;
  /** index/status answers `indexing` this many times after a sync. */
  indexingPolls: number;
  /** The index ends `failed` instead of `ready`. */
  failIndex: boolean;
  /** tools/call text; default echoes tool, argument and path. */
  toolText: ((name: string, args: Record<string, unknown>, path: string) => string) | null;
}

const DEFAULTS: DaemonSwitches = {
  rpcError: null,
  toolError: null,
  httpStatus: null,
  redirectTo: null,
  delayMs: 0,
  indexingPolls: 1,
  failIndex: false,
  toolText: null,
};

export class FakeIndexerDaemon {
  readonly calls: DaemonCall[] = [];
  readonly indexes = new Map<string, RepoIndex>();
  switches: DaemonSwitches = { ...DEFAULTS };
  url = '';
  private server: Server | null = null;

  static async start(): Promise<FakeIndexerDaemon> {
    const d = new FakeIndexerDaemon();
    d.server = createServer((req, res) => void d.handle(req, res));
    await new Promise<void>((resolve) => d.server!.listen(0, '127.0.0.1', resolve));
    d.url = `http://127.0.0.1:${(d.server!.address() as AddressInfo).port}`;
    return d;
  }

  /** A SERVICE_INDEXER_DAEMON_URL_TEMPLATE pointing here, ids in separate path segments. */
  get template(): string {
    return `${this.url}/daemons/{install}/{repo}/rpc`;
  }

  /** The path a given (install, repo) is reached on, per `template`. */
  pathOf(installId: string, repoId: number): string {
    return `/daemons/${installId}/${repoId}/rpc`;
  }

  set(s: Partial<DaemonSwitches>): void {
    this.switches = { ...this.switches, ...s };
  }

  reset(): void {
    this.switches = { ...DEFAULTS };
    this.calls.length = 0;
    this.indexes.clear();
  }

  callsOf(method: string, path?: string): DaemonCall[] {
    return this.calls.filter((c) => c.method === method && (path === undefined || c.path === path));
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = (req.url ?? '/').split('?')[0]!;
    let msg: { jsonrpc?: string; id?: unknown; method?: unknown; params?: unknown };
    try {
      msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
    }
    const method = typeof msg.method === 'string' ? msg.method : '';
    const params = (msg.params && typeof msg.params === 'object' ? msg.params : {}) as Record<string, unknown>;
    this.calls.push({ path, method, params, at: Date.now() });
    const s = this.switches;
    if (s.delayMs > 0) await new Promise((r) => setTimeout(r, s.delayMs));
    if (res.destroyed) return;
    if (s.redirectTo !== null) {
      res.writeHead(302, { location: s.redirectTo }).end();
      return;
    }
    if (req.method !== 'POST' || msg.jsonrpc !== '2.0')
      return send(res, 200, {
        jsonrpc: '2.0',
        id: msg.id ?? null,
        error: { code: -32600, message: 'invalid request' },
      });
    if (s.httpStatus !== null) {
      res.writeHead(s.httpStatus).end();
      return;
    }
    if (s.rpcError && s.rpcError.methods.includes(method)) {
      return send(res, 200, {
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: s.rpcError.code, message: s.rpcError.message },
      });
    }
    const result = this.answer(path, method, params);
    if ('error' in result) return send(res, 200, { jsonrpc: '2.0', id: msg.id, error: result.error });
    send(res, 200, { jsonrpc: '2.0', id: msg.id, result: result.result });
  }

  private answer(
    path: string,
    method: string,
    params: Record<string, unknown>,
  ): { result: unknown } | { error: { code: number; message: string } } {
    const s = this.switches;
    switch (method) {
      case 'tools/call': {
        const name = String(params.name ?? '');
        const args = (params.arguments ?? {}) as Record<string, unknown>;
        if (!['service_explain', 'service_impact', 'service_slice', 'service_query'].includes(name))
          return { error: { code: -32602, message: `unknown tool ${name}` } };
        if (s.toolError !== null) return { result: { content: [{ type: 'text', text: s.toolError }], isError: true } };
        const text = s.toolText ? s.toolText(name, args, path) : `${name} ${JSON.stringify(args)} at ${path}`;
        return { result: { content: [{ type: 'text', text }] } };
      }
      case 'index/sync': {
        for (const k of ['repo_full_name', 'clone_url', 'access_token']) {
          if (typeof params[k] !== 'string' || params[k] === '')
            return { error: { code: -32602, message: `${k} is required` } };
        }
        const sha = typeof params.sha === 'string' ? params.sha : 'head0000000000000000000000000000000000000';
        const prev = this.indexes.get(path);
        this.indexes.set(path, {
          status: 'indexing',
          sha,
          pollsLeft: s.indexingPolls,
          lastIndexedSha: prev?.lastIndexedSha ?? null,
        });
        return { result: { status: 'indexing', sha } };
      }
      case 'index/status': {
        const ix = this.indexes.get(path);
        if (!ix) return { error: { code: -32001, message: 'no index here; call index/sync first' } };
        if (ix.status === 'indexing') {
          if (ix.pollsLeft > 0) {
            ix.pollsLeft--;
            return {
              result: {
                status: 'indexing',
                last_indexed_sha: ix.lastIndexedSha,
                progress: { files_done: 10 * (s.indexingPolls - ix.pollsLeft) },
              },
            };
          }
          ix.status = s.failIndex ? 'failed' : 'ready';
          if (ix.status === 'ready') ix.lastIndexedSha = ix.sha;
        }
        return { result: { status: ix.status, last_indexed_sha: ix.lastIndexedSha } };
      }
      default:
        return { error: { code: -32601, message: `method not found: ${method}` } };
    }
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
