/**
 * Metrics of the calls this node makes upstream: Slack's Web API (`chatapp`), GitHub's
 * REST API (`codehost`) and the indexer daemons (`indexer`), by API method and outcome,
 * with latency. Both SDKs and the daemon client send through Node's fetch (undici), whose
 * diagnostics channels report every request, so no client needs wrapping and no call
 * is missed. Outcome is the HTTP status, or `network_error` when none came back.
 */
import diagnostics from 'node:diagnostics_channel';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Config } from '../config.js';

interface UndiciRequest {
  origin?: string;
  method?: string;
  path?: string;
}

type Connector = 'chatapp' | 'codehost' | 'indexer';

/** Slack: the method is the last path segment (`/api/chat.postMessage`). */
function slackMethod(path: string): string {
  return path.split('?')[0]!.split('/').pop() || 'unknown';
}

/** GitHub: the route template, ids and names replaced so label values stay few. */
function githubRoute(method: string, path: string): string {
  const parts = path.split('?')[0]!.split('/');
  const out = parts.map((p, i) => {
    if (parts[1] === 'repos' && i === 2) return '{owner}';
    if (parts[1] === 'repos' && i === 3) return '{repo}';
    if (/^\d+$/.test(p)) return '{id}';
    if (/^[0-9a-f]{40}$/.test(p)) return '{sha}';
    return p;
  });
  return `${method} ${out.join('/')}`;
}

export function observeUpstreamCalls(registry: Registry, config: Readonly<Config>): () => void {
  const registers = [registry];
  const calls = new Counter({
    name: 'connector_service_upstream_requests_total',
    help:
      'Requests to Slack, GitHub and the indexer daemons, by connector, API method and outcome ' +
      '(HTTP status or network_error)',
    labelNames: ['connector', 'method', 'outcome'],
    registers,
  });
  const latency = new Histogram({
    name: 'connector_service_upstream_request_duration_seconds',
    help: 'Time to the response headers of an upstream request, by connector and API method',
    labelNames: ['connector', 'method'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const origins = new Map<string, Connector>();
  const add = (url: string | null | undefined, c: Connector) => {
    try {
      if (url) origins.set(new URL(url.replace('{install}', 'i').replace('{repo}', 'r')).origin, c);
    } catch {
      // An unparsable URL setting is refused by loadConfig; nothing to observe here.
    }
  };
  add(config.chatapp.apiUrl, 'chatapp');
  add(config.codehost.apiUrl, 'codehost');
  add(config.codehost.indexerUrlTemplate, 'indexer');

  const started = new WeakMap<object, { connector: Connector; method: string; at: number }>();
  const onCreate = (m: unknown) => {
    const req = (m as { request: UndiciRequest }).request;
    const connector = req.origin ? origins.get(new URL(req.origin).origin) : undefined;
    if (!connector) return;
    const path = req.path ?? '/';
    const method =
      connector === 'chatapp'
        ? slackMethod(path)
        : connector === 'codehost'
          ? githubRoute(req.method ?? 'GET', path)
          : 'rpc';
    started.set(req, { connector, method, at: performance.now() });
  };
  const finish = (req: object, outcome: string) => {
    const s = started.get(req);
    if (!s) return;
    started.delete(req);
    calls.inc({ connector: s.connector, method: s.method, outcome });
    latency.observe({ connector: s.connector, method: s.method }, (performance.now() - s.at) / 1000);
  };
  const onHeaders = (m: unknown) => {
    const { request, response } = m as { request: object; response: { statusCode: number } };
    finish(request, String(response.statusCode));
  };
  const onError = (m: unknown) => finish((m as { request: object }).request, 'network_error');

  diagnostics.subscribe('undici:request:create', onCreate);
  diagnostics.subscribe('undici:request:headers', onHeaders);
  diagnostics.subscribe('undici:request:error', onError);
  return () => {
    diagnostics.unsubscribe('undici:request:create', onCreate);
    diagnostics.unsubscribe('undici:request:headers', onHeaders);
    diagnostics.unsubscribe('undici:request:error', onError);
  };
}
