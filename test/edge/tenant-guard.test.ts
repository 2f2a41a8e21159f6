/**
 * Tenant authentication is attached in one place (tenant-guard.ts, issue 35): a connector's
 * route asks for it with `config: { tenant: true }` and gets the Bearer check before its
 * body is read, the per-tenant rate, and a handler that runs in the caller's tenant scope on
 * the fenced pool, as the edge's own tenant routes do.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeContext } from '../../src/edge/context.js';
import type { ScopeNeed } from '../../src/api-scopes.js';
import { operation, type Auth } from '../../src/edge/operation.js';
import { edgeFixture } from '../support/edge.js';

const PROBE = operation({
  operationId: 'probe',
  tag: 'connectors',
  summary: 'A probe',
  auth: 'bearer',
  scope: 'installs:read',
  responses: { 200: { description: 'ok', schema: z.unknown() } },
  errors: [],
});

const probe: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.post('/api/v1/probe', { schema: { ...PROBE, hide: true }, config: { tenant: true } }, async (req) => {
    // Deliberately no tenant filter: the fence alone keeps other tenants' installs out.
    const { rows } = await (ctx.tenantDb ?? ctx.db).query<{ tenant_id: string; login: string }>(
      'SELECT DISTINCT tenant_id, current_user AS login FROM installs',
    );
    return { tenant: req.tenantId, rows };
  });
};

describe('a connector route with config.tenant', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  beforeAll(async () => {
    f = await edgeFixture(undefined, [{ plugin: probe }]);
  });
  afterAll(() => f.close());

  it('refuses a missing or unknown key with 401 before reading the body', async () => {
    for (const headers of [{}, { authorization: 'Bearer csk_not_a_key_of_anyone' }]) {
      const res = await f.app.inject({ method: 'POST', url: '/api/v1/probe', headers, payload: '{"never":' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it("runs as the caller's tenant on the tenant login: other tenants' rows are not there", async () => {
    const [a, b] = [await f.tenant('guard-a'), await f.tenant('guard-b')];
    await f.install(a.tenant_id);
    await f.install(b.tenant_id);
    const res = await f.app.inject({ method: 'POST', url: '/api/v1/probe', headers: a.auth, payload: {} });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { tenant: string; rows: Array<{ tenant_id: string; login: string }> };
    expect(body.tenant).toBe(a.tenant_id);
    expect(body.rows).toEqual([{ tenant_id: a.tenant_id, login: expect.stringMatching(/_tenant$/) }]);
  });
});

/** A connector route defined with operation(): its documented `auth` decides the guard. */
const documented =
  (auth: Auth, config?: { tenant: boolean }, scope: ScopeNeed = 'graph:read'): FastifyPluginAsync<EdgeContext> =>
  async (app) => {
    const fields = {
      operationId: 'probeDocumented',
      tag: 'connectors' as const,
      summary: 'A probe',
      responses: { 200: { description: 'ok', schema: z.object({ tenant: z.string().nullable() }) } },
      errors: [],
    };
    const schema = auth === 'public' ? operation({ ...fields, auth }) : operation({ ...fields, auth, scope });
    app.get('/api/v1/probe-documented', { schema, config }, async (req) => ({ tenant: req.tenantId ?? null }));
  };

describe('the guard and the document agree', () => {
  it('guards a route whose operation takes a key, without config.tenant', async () => {
    const f = await edgeFixture(undefined, [{ plugin: documented('bearer') }]);
    try {
      const res = await f.app.inject({ method: 'GET', url: '/api/v1/probe-documented' });
      expect(res.statusCode).toBe(401);
      const a = await f.tenant('guard-doc');
      const ok = await f.app.inject({ method: 'GET', url: '/api/v1/probe-documented', headers: a.auth });
      expect(ok.json()).toEqual({ tenant: a.tenant_id });
    } finally {
      await f.close();
    }
  });

  it('refuses to start with a route documented public that asks for the tenant guard', async () => {
    await expect(edgeFixture(undefined, [{ plugin: documented('public', { tenant: true }) }])).rejects.toThrow(
      /documented as public/,
    );
  });
});

describe('scopes (INTERFACE §10.4), checked by the guard from the operation', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  beforeAll(async () => {
    f = await edgeFixture(undefined, [{ plugin: probe }]);
  });
  afterAll(() => f.close());

  it('refuses a key without the scope with 403 forbidden naming it, before reading the body', async () => {
    const t = await f.tenant('scope-a');
    const other = await f.key(t.tenant_id, { scopes: ['graph:read', 'installs:write', 'audit:read'] });
    const res = await f.app.inject({ method: 'POST', url: '/api/v1/probe', headers: other.auth, payload: '{"never":' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({ code: 'forbidden', scope: 'installs:read' });
    expect(res.json().error.message).toContain('installs:read');
    expect(res.headers['x-request-id']).toBe(res.json().error.request_id);
    const one = await f.key(t.tenant_id, { scopes: ['installs:read'] });
    const ok = await f.app.inject({ method: 'POST', url: '/api/v1/probe', headers: one.auth, payload: {} });
    expect(ok.statusCode).toBe(200);
  });

  it('lets any valid key through a route that needs no scope, and no key through one that needs one', async () => {
    const t = await f.tenant('scope-b');
    const one = await f.key(t.tenant_id, { scopes: ['audit:read'] });
    expect((await f.app.inject({ method: 'GET', url: '/api/v1/connectors', headers: one.auth })).statusCode).toBe(200);
    const res = await f.app.inject({ method: 'GET', url: '/api/v1/connectors/installs', headers: one.auth });
    expect(res.json().error).toMatchObject({ code: 'forbidden', scope: 'installs:read' });
  });

  it('answers 401 to an expired key, as to a revoked one', async () => {
    const t = await f.tenant('scope-c');
    const k = await f.key(t.tenant_id, { expiresInDays: 1 });
    await f.pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE key_id = $1`, [k.key_id]);
    const res = await f.app.inject({ method: 'GET', url: '/api/v1/connectors', headers: k.auth });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
  });

  it('refuses to start with a tenant route whose definition names no scope', async () => {
    const bare: FastifyPluginAsync<EdgeContext> = async (app) => {
      app.get('/api/v1/no-scope', { schema: { hide: true }, config: { tenant: true } }, async () => ({}));
    };
    await expect(edgeFixture(undefined, [{ plugin: bare }])).rejects.toThrow(/GET \/api\/v1\/no-scope: .*scope/);
  });
});
