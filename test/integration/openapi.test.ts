/**
 * The OpenAPI document (INTERFACE §9.3) of a node with both connectors enabled and the
 * admin endpoints on: valid OpenAPI 3.1 by a real validator and by Redocly's recommended
 * rules, every registered route in it as an operation with an id, a tag, explicit security
 * and its errors with the §2 body, the server's own request limits, `servers` as the caller
 * reached it, and no schema nothing uses. What the routes answer against it is the
 * conformance test's (openapi-conformance.test.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from 'connector-service/testing';
import { chatEnv } from '../support/slack-harness.js';
import { startCodehostHarness, type CodehostHarness } from '../support/github-harness.js';

let slack: FakeSlack;
let h: CodehostHarness;
type Schema = Record<string, any>;
type Response = { description: string; headers?: Record<string, Schema>; content?: Record<string, { schema: Schema }> };
type Operation = {
  operationId?: string;
  tags?: string[];
  summary?: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
  requestBody?: { description?: string; content: Record<string, { schema: Schema }> };
  responses: Record<string, Response>;
  security?: Array<Record<string, string[]>>;
};
type Doc = {
  openapi: string;
  servers?: Array<{ url: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Schema> };
};
let doc: Doc;

beforeAll(async () => {
  slack = await new FakeSlack().start();
  h = await startCodehostHarness(chatEnv(slack));
  const res = await fetch(`${h.node.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Doc;
});
afterAll(async () => {
  await h?.stop();
  await slack?.close();
});

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');
const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op, name: `${method.toUpperCase()} ${path}` })),
  );
const op = (path: string, method: string) => doc.paths[path]![method]!;
const param = (o: Operation, name: string) => o.parameters!.find((p) => p.name === name)!;

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every registered route, with its path parameters', () => {
    const routes = h.node.node.edge!.registeredRoutes.filter((r) => !r.hidden && r.method !== 'HEAD');
    // Both connectors' routes are mounted, so the list is the whole API.
    expect(routes.map((r) => r.url)).toEqual(
      expect.arrayContaining([
        '/api/v1/connectors/chatapp/events',
        '/api/v1/connectors/codehost/webhooks',
        '/api/v1/connectors/codehost/admin/install',
        '/api/v1/connectors/oauth/callback',
        '/api/v1/graph/nodes/:nodeId/actions',
        '/api/v1/dead-letters/:id/replay',
      ]),
    );
    for (const r of routes) {
      const o = doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()];
      expect(o, `${r.method} ${r.url}`).toBeDefined();
      for (const [, name] of r.url.matchAll(/:([A-Za-z_]+)/g)) {
        expect(
          o!.parameters?.some((p) => p.in === 'path' && p.name === name && p.required),
          `${r.url} ${name}`,
        ).toBe(true);
      }
    }
    // The routes, and the page @fastify/swagger-ui serves (hidden by it, documented by us).
    expect(operations().map((o) => o.name)).toHaveLength(routes.length + 1);
    expect(doc.paths['/docs']?.get?.responses['200']?.content?.['text/html']).toBeDefined();
  });

  it('gives every operation a unique operationId, one declared tag, a summary and explicit security', () => {
    const ids = operations().map(({ op: o }) => o.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set(doc.tags.map((t) => t.name));
    expect(doc.tags.every((t) => t.description.length > 0)).toBe(true);
    for (const { name, op: o } of operations()) {
      expect(o.tags, name).toHaveLength(1);
      expect(tags.has(o.tags![0]!), name).toBe(true);
      expect(o.summary, name).toBeTruthy();
      expect(o.security, name).toBeDefined();
    }
    // Every declared tag has operations.
    expect(new Set(operations().map(({ op: o }) => o.tags![0]))).toEqual(tags);
  });

  it('needs no key on the public routes (the callback and the webhooks authenticate otherwise), a key elsewhere', () => {
    const open = operations()
      .filter(({ op: o }) => o.security!.length === 0)
      .map((o) => o.name);
    expect(open.sort()).toEqual(
      [
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'GET /openapi.json',
        'GET /docs',
        'GET /api/v1/connectors/oauth/callback',
        'POST /api/v1/connectors/chatapp/events',
        'POST /api/v1/connectors/codehost/webhooks',
      ].sort(),
    );
    // The Bearer requirement names the key's scope (INTERFACE §10.4); GET /api/v1/connectors takes any key.
    expect(op('/api/v1/connectors/installs/{installId}/emit', 'post').security).toEqual([
      { bearerAuth: ['installs:write'] },
    ]);
    expect(op('/api/v1/connectors', 'get').security).toEqual([{ bearerAuth: [] }]);
    expect(op('/api/v1/connectors/codehost/admin/install', 'post').security).toEqual([
      { adminToken: [], bearerAuth: ['installs:write'] },
    ]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('describes every answer, lists each error status with its codes and the §2 body, never as `default`', () => {
    const error = doc.components.schemas.Error!;
    expect(error.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'request_id']));
    for (const { name, op: o } of operations()) {
      expect(o.responses.default, name).toBeUndefined();
      for (const [status, r] of Object.entries(o.responses)) {
        expect(r.description, `${name} ${status}`).not.toMatch(/^Default Response$/);
        expect(r.headers?.['X-Request-Id'], `${name} ${status}`).toMatchObject({ required: true });
        if (Number(status) < 400 || (name === 'GET /readyz' && status === '503')) continue;
        const schema = r.content!['application/json']!.schema;
        expect(schema.allOf[0], `${name} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
        expect(schema.allOf[1].properties.error.properties.code.enum.length, `${name} ${status}`).toBeGreaterThan(0);
      }
      expect(o.responses['500'], name).toBeDefined();
    }
    const emit = op('/api/v1/connectors/installs/{installId}/emit', 'post');
    expect(Object.keys(emit.responses)).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '429',
      '500',
      '502',
      '503',
    ]);
    expect(
      emit.responses['409']!.content!['application/json']!.schema.allOf[1].properties.error.properties.code.enum,
    ).toEqual(['install_not_active', 'idempotency_key_reused']);
    expect(emit.responses['429']!.headers!['Retry-After']).toMatchObject({ required: true });
    const admin = op('/api/v1/connectors/codehost/admin/install', 'post');
    expect(admin.responses['500']!.description).toContain('`not_configured`');
    expect(admin.responses['501']!.description).toContain('`not_configured`');
  });

  it('has no component nothing refers to (no *Input twins)', () => {
    const text = JSON.stringify(doc.paths) + JSON.stringify(doc.components.schemas);
    for (const name of Object.keys(doc.components.schemas)) {
      expect(name).not.toMatch(/Input$/);
      expect(text.includes(`"#/components/schemas/${name}"`), name).toBe(true);
    }
  });

  it("states the server's own request limits", () => {
    for (const path of [
      '/api/v1/connectors/installs/{installId}/events',
      '/api/v1/graph/nodes',
      '/api/v1/dead-letters',
    ]) {
      expect(param(op(path, 'get'), 'limit').schema, path).toMatchObject({ type: 'integer', minimum: 1, maximum: 500 });
    }
    const emit = op('/api/v1/connectors/installs/{installId}/emit', 'post');
    expect(param(emit, 'idempotency-key').schema.pattern).toBe('^[\\x21-\\x7e]{1,255}$');
    expect(param(emit, 'installId').schema).toMatchObject({ type: 'string', format: 'uuid' });
    expect(emit.requestBody!.description).toContain('1 MiB');
    expect(op('/api/v1/connectors/codehost/webhooks', 'post').requestBody!.description).toContain('25 MiB');
    const start = op('/api/v1/connectors/chatapp/oauth/start', 'post').requestBody!.content['application/json']!;
    expect(start.schema.properties.redirect_uri).toMatchObject({
      format: 'uri',
      maxLength: 2000,
      pattern: expect.stringContaining('https?'),
    });
    expect(param(op('/api/v1/dead-letters/{id}/replay', 'post'), 'id').schema.pattern).toBe('^\\d{1,18}$');
    expect(param(op('/api/v1/connectors/{connectorId}/oauth/start', 'post'), 'connectorId').schema.enum).toEqual([
      'chatapp',
      'codehost',
    ]);
  });

  it("describes emit's body as one of the emit kinds with their fields", () => {
    const body = op('/api/v1/connectors/installs/{installId}/emit', 'post').requestBody!.content['application/json']!
      .schema;
    const kinds = (body.oneOf as Schema[]).map((v) => v.properties.kind.const ?? v.properties.kind.enum[0]);
    expect(kinds).toEqual([
      'chatapp.message',
      'chatapp.reaction',
      'codehost.pr_summary_comment',
      'codehost.issue_comment',
      'codehost.review_comment',
      'codehost.label',
      'codehost.commit_status',
    ]);
    const reaction = (body.oneOf as Schema[])[1]!.properties.body;
    expect(reaction.required).toEqual(['channel_id', 'timestamp', 'name']);
    expect(reaction.additionalProperties).toBe(false);
    const label = (body.oneOf as Schema[])[5]!.properties.body;
    expect(label.properties.labels).toMatchObject({ type: 'array', maxItems: 100 });
    expect(label.properties.repo_full_name.pattern).toBeDefined();
  });

  it('names the service as the request reached it in `servers`, behind a proxy too', async () => {
    expect(doc.servers).toEqual([{ url: h.node.url, description: expect.any(String) }]);
    const res = await fetch(`${h.node.url}/openapi.json`, {
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'connectors.example.org' },
    });
    expect(((await res.json()) as Doc).servers).toEqual([
      { url: 'https://connectors.example.org', description: expect.any(String) },
    ]);
    expect(res.headers.get('vary')).toContain('x-forwarded-host');
  });

  it("passes Redocly's recommended rules: no error, and only the warnings redocly.yaml justifies", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
    try {
      const file = join(dir, 'openapi.json');
      await writeFile(file, JSON.stringify(doc));
      const { stdout } = await promisify(execFile)(
        'node_modules/.bin/redocly',
        ['lint', file, '--config', 'redocly.yaml', '--format', 'json'],
        { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' } },
      );
      const report = JSON.parse(stdout) as {
        totals: { errors: number };
        problems: Array<{ ruleId: string; severity: string; location: Array<{ pointer: string }> }>;
      };
      expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
      expect(report.totals.errors).toBe(0);
      const warnings = report.problems.map((p) => `${p.ruleId} ${p.location[0]!.pointer}`).sort();
      expect(warnings).toEqual(
        [
          'info-license #/info',
          ...['healthz', 'readyz', 'metrics', 'openapi.json', 'docs'].map(
            (p) => `operation-4xx-response #/paths/~1${p}/get/responses`,
          ),
        ].sort(),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the signed webhook routes', () => {
  const schemaOf = (o: Operation) => o.requestBody!.content['application/json']!.schema;

  it('describe the Slack events envelopes and their signature headers', () => {
    const o = op('/api/v1/connectors/chatapp/events', 'post');
    const types = (schemaOf(o).oneOf ?? schemaOf(o).anyOf).map(
      (s: Schema) => s.properties.type.const ?? s.properties.type.enum?.[0],
    );
    expect(types).toEqual(expect.arrayContaining(['url_verification', 'event_callback']));
    const headers = (o.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
    expect(headers).toEqual(expect.arrayContaining(['x-slack-signature', 'x-slack-request-timestamp']));
  });

  it('describe the GitHub payload as an object and its delivery headers as required', () => {
    const o = op('/api/v1/connectors/codehost/webhooks', 'post');
    expect(schemaOf(o).type).toBe('object');
    for (const name of ['x-github-event', 'x-github-delivery', 'x-hub-signature-256']) {
      expect(o.parameters!.find((p) => p.in === 'header' && p.name === name)?.required, name).toBe(true);
    }
  });
});

describe('GET /docs', () => {
  it('renders the document without auth', async () => {
    const res = await fetch(`${h.node.url}/docs`, { redirect: 'follow' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const root = await fetch(`${h.node.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/docs');
  });
});
