/**
 * The OpenAPI document (INTERFACE §9.3) of a node with both connectors enabled and the
 * admin endpoints on: valid OpenAPI 3.1 by a real validator, every registered route in
 * it with its parameters, the §2 error shape and Bearer security; `/docs` renders it.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from 'connector-service/testing';
import { chatEnv } from '../fakes/slack-harness.js';
import { startCodehostHarness, type CodehostHarness } from '../fakes/github-harness.js';

let slack: FakeSlack;
let h: CodehostHarness;
type Operation = {
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
  security?: Array<Record<string, string[]>>;
};
let doc: { openapi: string; paths: Record<string, Record<string, Operation>>; components: Record<string, any> };

beforeAll(async () => {
  slack = await new FakeSlack().start();
  h = await startCodehostHarness(chatEnv(slack));
  const res = await fetch(`${h.node.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as typeof doc;
});
afterAll(async () => {
  await h?.stop();
  await slack?.close();
});

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}');

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every registered route, with its path parameters and the error shape', () => {
    const routes = h.node.node.edge!.registeredRoutes.filter((r) => !r.hidden && r.method !== 'HEAD');
    // Both connectors' routes are mounted, so the list is the whole API.
    expect(routes.map((r) => r.url)).toEqual(
      expect.arrayContaining([
        '/api/v1/connectors/chatapp/events',
        '/api/v1/connectors/codehost/webhooks',
        '/api/v1/connectors/codehost/admin/install',
        '/api/v1/connectors/oauth/callback',
        '/api/v1/graph/nodes/:nodeId/actions',
      ]),
    );
    for (const r of routes) {
      const op = doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.url}`).toBeDefined();
      for (const [, name] of r.url.matchAll(/:([A-Za-z_]+)/g)) {
        expect(
          op!.parameters?.some((p) => p.in === 'path' && p.name === name),
          `${r.url} ${name}`,
        ).toBe(true);
      }
      expect(op!.responses.default?.content?.['application/json']?.schema).toEqual({
        $ref: '#/components/schemas/Error',
      });
      expect(
        Object.keys(op!.responses).some((s) => /^2\d\d$/.test(s)),
        `${r.url} success response`,
      ).toBe(true);
    }
    const documented = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    expect(documented).toBe(routes.length);
  });

  it('describes bodies, queries, the error body and Bearer security', () => {
    const emit = doc.paths['/api/v1/connectors/installs/{installId}/emit']!.post!;
    expect(emit.requestBody).toBeDefined();
    expect(emit.security).toEqual([{ bearerAuth: [] }]);
    expect(emit.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key')).toBe(true);
    const nodes = doc.paths['/api/v1/graph/nodes']!.get!;
    expect(nodes.parameters?.map((p) => p.name)).toEqual(expect.arrayContaining(['kind', 'q', 'limit', 'cursor']));
    expect(doc.paths['/api/v1/connectors/oauth/callback']!.get!.security).toEqual([]);
    expect(doc.paths['/api/v1/connectors/codehost/admin/install']!.post!.security).toEqual([
      { adminToken: [], bearerAuth: [] },
    ]);
    expect(doc.paths['/healthz']!.get!.security).toBeUndefined();
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const error = doc.components.schemas.Error;
    expect(error.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'request_id']));
  });
});

describe('the signed webhook routes', () => {
  const schemaOf = (op: Operation) =>
    (op.requestBody as { content: Record<string, { schema: Record<string, any> }> }).content['application/json']!
      .schema;

  it('describe the Slack events envelopes and their signature headers', () => {
    const op = doc.paths['/api/v1/connectors/chatapp/events']!.post!;
    const types = (schemaOf(op).oneOf ?? schemaOf(op).anyOf).map(
      (s: any) => s.properties.type.const ?? s.properties.type.enum?.[0],
    );
    expect(types).toEqual(expect.arrayContaining(['url_verification', 'event_callback']));
    const headers = (op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
    expect(headers).toEqual(expect.arrayContaining(['x-slack-signature', 'x-slack-request-timestamp']));
  });

  it('describe the GitHub payload as an object and its delivery headers as required', () => {
    const op = doc.paths['/api/v1/connectors/codehost/webhooks']!.post!;
    expect(schemaOf(op).type).toBe('object');
    const headers = (op.parameters ?? []) as Array<{ name: string; in: string; required?: boolean }>;
    for (const name of ['x-github-event', 'x-github-delivery', 'x-hub-signature-256']) {
      expect(headers.find((p) => p.in === 'header' && p.name === name)?.required, name).toBe(true);
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
