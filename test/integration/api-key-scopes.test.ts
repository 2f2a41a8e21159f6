/**
 * Scoped API keys (INTERFACE §10.4) on a node with both connectors and the admin routes, driven
 * from the route table itself (the OpenAPI document, which shows each operation's scope):
 * every keyed operation names the scope §10.4 gives its route (a new route without one fails
 * here, and at start); a key holding every scope but that one gets 403 `forbidden` naming it; a
 * key holding that scope alone gets past the check. The `api-keys` commands: create with
 * scopes, expiry and label, list without secrets, `last_used_at` after use, revoked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from 'connector-service/testing';
import { API_SCOPES, type ApiScope, type ScopeNeed } from '../../src/api-scopes.js';
import { createApiKey } from '../../src/store/api-keys.js';
import { chatEnv } from '../support/slack-harness.js';
import { startCodehostHarness, type CodehostHarness } from '../support/github-harness.js';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { until } from '../support/until.js';

type Operation = { operationId: string; security?: Array<Record<string, string[]>>; requestBody?: unknown };
type Doc = { paths: Record<string, Record<string, Operation>> };

let slack: FakeSlack;
let h: CodehostHarness;
let doc: Doc;
beforeAll(async () => {
  slack = await new FakeSlack().start();
  h = await startCodehostHarness(chatEnv(slack));
  doc = (await (await fetch(`${h.node.url}/openapi.json`)).json()) as Doc;
});
afterAll(async () => {
  await h?.stop();
  await slack?.close();
});

/** INTERFACE §10.4, route by route: what each keyed route of the contract needs. */
function contractScope(method: string, path: string): ScopeNeed | null {
  if (method === 'GET' && path === '/api/v1/connectors') return 'any';
  // MCP authenticates with any key; each tool checks its own scope (§10.3).
  if (path === '/mcp') return 'any';
  if (path.startsWith('/api/v1/webhooks')) return 'webhooks:write';
  if (path === '/api/v1/audit') return 'audit:read';
  if (path === '/api/v1/export') return 'graph:read';
  if (path.startsWith('/api/v1/graph/')) return method === 'GET' ? 'graph:read' : 'graph:write';
  if (path.startsWith('/api/v1/connectors/') || path.startsWith('/api/v1/dead-letters')) {
    return method === 'GET' ? 'installs:read' : 'installs:write';
  }
  return null;
}

const keyed = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => op.security?.some((s) => 'bearerAuth' in s))
      .map(([method, op]) => {
        const bearer = op.security!.find((s) => 'bearerAuth' in s)!.bearerAuth!;
        const scope: ScopeNeed = bearer.length === 0 ? 'any' : (bearer[0] as ApiScope);
        return { method: method.toUpperCase(), path, op, scope, name: `${method.toUpperCase()} ${path}` };
      }),
  );

const keyOf = async (tenantId: string, scopes: readonly ApiScope[]) =>
  (await createApiKey(h.node.pool, TEST_MASTER_KEY, tenantId, { scopes })).api_key;

async function call(route: ReturnType<typeof keyed>[number], key: string) {
  const url = route.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
    name === 'connectorId' ? 'chatapp' : crypto.randomUUID(),
  );
  const res = await fetch(`${h.node.url}${url}`, {
    method: route.method,
    headers: {
      authorization: `Bearer ${key}`,
      'x-service-admin-token': h.adminToken,
      ...(route.op.requestBody ? { 'content-type': 'application/json' } : {}),
    },
    ...(route.op.requestBody ? { body: '{}' } : {}),
  });
  const body = (await res.json().catch(() => null)) as { error?: { code: string; scope?: string } } | null;
  return { status: res.status, error: body?.error ?? null };
}

describe('every keyed route and its scope', () => {
  it('names the scope §10.4 gives its route, in the document', () => {
    const routes = keyed();
    expect(routes.map((r) => r.name)).toEqual(expect.arrayContaining(['GET /api/v1/connectors/installs']));
    for (const r of routes) {
      const want = contractScope(r.method, r.path);
      expect(want, `${r.name}: no §10.4 rule in this test; add the route's scope to contractScope`).not.toBeNull();
      expect(r.scope, r.name).toBe(want);
      expect(
        r.op.security!.every((s) => !('bearerAuth' in s) || s.bearerAuth!.length <= 1),
        r.name,
      ).toBe(true);
    }
  });

  it('answers 403 forbidden naming the scope to a key that lacks it, and lets a key with it alone through', async () => {
    const t = await h.node.tenant('scopes');
    for (const r of keyed()) {
      if (r.scope === 'any') {
        const one = await call(r, await keyOf(t.tenant_id, ['audit:read']));
        expect([401, 403], r.name).not.toContain(one.status);
        continue;
      }
      const lacking = await call(
        r,
        await keyOf(
          t.tenant_id,
          API_SCOPES.filter((s) => s !== r.scope),
        ),
      );
      expect(lacking.status, r.name).toBe(403);
      expect(lacking.error, r.name).toMatchObject({ code: 'forbidden', scope: r.scope });
      const holding = await call(r, await keyOf(t.tenant_id, [r.scope]));
      expect([401, 403], `${r.name}: ${JSON.stringify(holding)}`).not.toContain(holding.status);
    }
  });
});

describe('api-keys create, list and revoke', () => {
  const env = () => ({ DATABASE_URL: testDatabaseUrl(), SERVICE_MASTER_KEY: TEST_MASTER_KEY });
  const cli = async (args: string[]) => {
    const r = await runCli(args, env());
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };
  const list = async (tenantId: string) =>
    (await cli(['api-keys', 'list', '--tenant', tenantId]))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('makes a labelled read-only key that expires, lists keys without secrets, records use and revocation', async () => {
    const tenant = JSON.parse(await cli(['tenants', 'create', '--name', 'listing'])) as Record<string, string>;
    const created = JSON.parse(
      await cli(
        ['api-keys', 'create', '--tenant', tenant.tenant_id!, '--scopes', 'graph:read,installs:read'].concat([
          '--expires-in',
          '30',
          '--label',
          'dashboard',
        ]),
      ),
    ) as Record<string, string>;
    const auth = { authorization: `Bearer ${created.api_key}` };
    expect((await fetch(`${h.node.url}/api/v1/connectors/installs`, { headers: auth })).status).toBe(200);
    const emit = await fetch(`${h.node.url}/api/v1/connectors/installs/${crypto.randomUUID()}/emit`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(emit.status).toBe(403);

    // Written off the request's path: wait for it where it is stored.
    await until('last_used_at of the key just used', async () => {
      const { rows } = await h.node.pool.query('SELECT last_used_at FROM api_keys WHERE key_id = $1', [created.key_id]);
      return rows[0]?.last_used_at !== null;
    });
    const text = await cli(['api-keys', 'list', '--tenant', tenant.tenant_id!]);
    expect(text).not.toContain(created.api_key!);
    expect(text).not.toContain(tenant.api_key!);
    const keys = await list(tenant.tenant_id!);
    expect(keys.map((k) => k.key_id)).toEqual([tenant.key_id, created.key_id]);
    for (const k of keys) {
      expect(Object.keys(k).sort()).toEqual(
        ['created_at', 'expires_at', 'key_id', 'label', 'last_used_at', 'revoked', 'scopes'].sort(),
      );
    }
    expect(keys[0]).toMatchObject({ label: null, scopes: [...API_SCOPES], expires_at: null, revoked: false });
    const mine = keys[1]!;
    expect(mine).toMatchObject({ label: 'dashboard', scopes: ['graph:read', 'installs:read'], revoked: false });
    const days = (Date.parse(mine.expires_at as string) - Date.parse(mine.created_at as string)) / 86_400_000;
    expect(days).toBeCloseTo(30, 3);
    expect(Date.parse(mine.last_used_at as string)).toBeGreaterThanOrEqual(Date.parse(mine.created_at as string));

    await cli(['api-keys', 'revoke', '--tenant', tenant.tenant_id!, '--key-id', created.key_id!]);
    expect((await list(tenant.tenant_id!))[1]).toMatchObject({ key_id: created.key_id, revoked: true });
  });

  it('refuses an unknown scope or a bad expiry with exit 2 naming the flag', async () => {
    const tenant = JSON.parse(await cli(['tenants', 'create', '--name', 'bad-flags'])) as Record<string, string>;
    for (const [flags, names] of [
      [['--scopes', 'graph:read,graph:delete'], /--scopes: unknown scope graph:delete/],
      [['--expires-in', '0'], /--expires-in/],
      [['--expires-in', 'soon'], /--expires-in/],
    ] as const) {
      const r = await runCli(['api-keys', 'create', '--tenant', tenant.tenant_id!, ...flags], env());
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(names);
    }
  });
});
