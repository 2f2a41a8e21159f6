/**
 * Integration: the `connectors` bin exports traces over OTLP/HTTP as the OTEL_* settings say
 * (INTERFACE §10.7), to a collector that is a small HTTP server in this test. With
 * `http/json`, a `pull_request.opened` webhook's trace arrives whole, from the edge's request
 * span to the PR summary comment's call to the fake GitHub, under the configured service
 * name, the last spans flushed as the node stops; with `http/protobuf` the same exporter
 * speaks protobuf.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeGitHub, generateAppKeyPair } from 'connector-service/testing';
import { freePort } from '../../src/dev/free-port.js';
import { codehostEnv, examplePayload, forInstallation, sign } from '../support/github-harness.js';
import { exited, runCli, startCli } from '../support/cli.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { cleanNamespace } from '../support/node.js';
import { until } from '../support/until.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}
interface Export {
  contentType: string;
  body: Buffer;
}

const REPO = 'Codertocat/Hello-World';
const INSTALLATION = 7_500_000 + Math.floor(Math.random() * 1000);
const keys = generateAppKeyPair();
const appId = 100_000 + Math.floor(Math.random() * 800_000);
const secret = `whsec-${randomBytes(12).toString('hex')}`;
const adminToken = `admin-${randomBytes(16).toString('hex')}`;

let gh: FakeGitHub;
let collector: Server;
const exports: Export[] = [];
const namespaces: string[] = [];

beforeAll(async () => {
  gh = await FakeGitHub.start(appId, keys.publicKeyPem);
  gh.addInstallation(INSTALLATION);
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        exports.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await gh?.close();
  await new Promise((r) => collector?.close(r));
  for (const ns of namespaces) await cleanNamespace(ns);
});

/** A node started through the bin, tracing to the collector with `protocol`. */
async function startNode(protocol: string) {
  const namespace = freshNamespace('otlp');
  namespaces.push(namespace);
  const port = await freePort();
  const node = await startCli(['serve'], {
    DATABASE_URL: testDatabaseUrl(),
    NATS_URL: testNatsUrl(),
    SERVICE_NAMESPACE: namespace,
    SERVICE_MASTER_KEY: TEST_MASTER_KEY,
    SERVICE_SHARDS: '4',
    SERVICE_LEASE_TTL_S: '3',
    PORT: String(port),
    LOG_LEVEL: 'info',
    ...codehostEnv({ appId, privateKeyPem: keys.privateKeyPem, secret, apiUrl: gh.url, adminToken }),
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_SERVICE_NAME: 'connectors-under-test',
  });
  const url = `http://127.0.0.1:${port}`;
  await until('the node is ready', async () => (await fetch(`${url}/readyz`).catch(() => null))?.status === 200, {
    timeoutMs: 60_000,
    everyMs: 200,
  });
  return { ...node, url };
}

async function cli(args: string[]): Promise<Record<string, string>> {
  const r = await runCli(args, { DATABASE_URL: testDatabaseUrl(), SERVICE_MASTER_KEY: TEST_MASTER_KEY });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim()) as Record<string, string>;
}

const jsonSpans = (): Array<OtlpSpan & { service: string }> =>
  exports
    .filter((e) => e.contentType.startsWith('application/json'))
    .flatMap((e) => {
      const doc = JSON.parse(e.body.toString('utf8')) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: OtlpSpan[] }>;
        }>;
      };
      return doc.resourceSpans.flatMap((rs) => {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        return rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, service })));
      });
    });
const attr = (s: OtlpSpan, k: string) => s.attributes?.find((a) => a.key === k)?.value.stringValue;

describe('tracing to an OTLP/HTTP collector (connectors serve)', () => {
  let apiKey = '';

  it('http/json: a webhook trace from the edge to the PR summary call reaches the collector', async () => {
    const number = 31;
    const node = await startNode('http/json');
    try {
      const tenant = await cli(['tenants', 'create', '--name', 'otlp']);
      apiKey = tenant.api_key!;
      const user = await cli([
        'users',
        'create',
        '--tenant',
        tenant.tenant_id!,
        '--email',
        `${randomUUID()}@otlp.test`,
      ]);
      const installed = await fetch(`${node.url}/api/v1/connectors/codehost/admin/install`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${apiKey}`,
          'x-service-admin-token': adminToken,
        },
        body: JSON.stringify({
          user_id: user.user_id,
          github_installation_id: INSTALLATION,
          account_type: 'Organization',
          account_login: `org-${INSTALLATION}`,
          repository_selection: 'all',
        }),
      });
      expect(installed.status).toBe(201);

      gh.repos.prFiles.set(`${REPO}#${number}`, [
        { filename: 'a.ts', status: 'modified', additions: 1, deletions: 0, changes: 1, patch: '@@ -1 +1 @@\n+a' },
      ]);
      const p = forInstallation(examplePayload('pull_request', 'opened'), INSTALLATION) as Record<string, any>;
      const raw = JSON.stringify({ ...p, number, pull_request: { ...p.pull_request, number } });
      const res = await fetch(`${node.url}/api/v1/connectors/codehost/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'pull_request',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': sign(secret, raw),
        },
        body: raw,
      });
      expect(res.status).toBe(202);
      await until('the summary comment at GitHub', () =>
        [...gh.repos.comments.values()].some((c) => c.issue_number === number),
      );
    } finally {
      // The node's stop flushes what the batch processor still holds.
      node.child.kill('SIGTERM');
      expect(await exited(node.child)).toBe(0);
    }

    const spans = jsonSpans();
    const route = spans.find(
      (s) => s.name === 'request' && attr(s, 'http.route') === '/api/v1/connectors/codehost/webhooks',
    );
    expect(route, 'the webhook request span').toBeDefined();
    const trace = spans.filter((s) => s.traceId === route!.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const post = trace.find(
      (s) => s.name === 'POST' && attr(s, 'url.full')?.endsWith(`/repos/${REPO}/issues/${number}/comments`),
    );
    expect(post, 'the summary POST in the webhook trace').toBeDefined();
    const chain: string[] = [];
    for (let s: OtlpSpan | undefined = post; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined)
      chain.push(s.name);
    expect(chain).toEqual([
      'POST',
      'actor.handle',
      'actor.request',
      'effect.run',
      'ingest.deliver',
      'ingest.publish',
      'request',
    ]);
    expect(new Set(trace.map((s) => s.service))).toEqual(new Set(['connectors-under-test']));
    expect(spans.some((s) => s.name === 'ingest.commit')).toBe(true);
  });

  it('http/protobuf: the same exporter speaks protobuf', async () => {
    const before = exports.length;
    const node = await startNode('http/protobuf');
    try {
      const res = await fetch(`${node.url}/api/v1/connectors`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(res.status).toBe(200);
    } finally {
      node.child.kill('SIGTERM');
      expect(await exited(node.child)).toBe(0);
    }
    const sent = exports.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((e) => e.contentType === 'application/x-protobuf')).toBe(true);
    // Protobuf keeps strings as they are: the route span's name and route are in the bytes.
    expect(sent.some((e) => e.body.includes('/api/v1/connectors') && e.body.includes('connectors-under-test'))).toBe(
      true,
    );
  });
});
