/**
 * Integration: the code-host admin install (spec §4.3, §5; INTERFACE §3, §8.11, §8.25) on
 * a real edge and Postgres against the fake GitHub: every gate in the contract's order
 * under each configuration, the token-mint proof, the one transaction, multi-tenancy, and
 * the App-installation table closed to the application's role.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAppInstallation } from '../../src/store/codehost-app-installations.js';
import { readCodehostSecret } from '../../src/store/codehost-credentials.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { listInstalls } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { createUser } from '../../src/store/users.js';
import { FakeGitHub, generateAppKeyPair } from 'connector-service/testing';
import { codehostEdge, type CodehostEdge } from '../support/github-edge.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

const PATH = '/api/v1/connectors/codehost/admin/install';
const keys = generateAppKeyPair();
const appId = 424242;
const adminToken = `admin-${randomBytes(16).toString('hex')}`;
let gh: FakeGitHub;
const edges: CodehostEdge[] = [];
let full: CodehostEdge;

const settings = (apiUrl: string): Record<string, string> => ({
  CODEHOST_CONNECTOR_ENABLED: 'true',
  CODEHOST_APP_ID: String(appId),
  CODEHOST_APP_PRIVATE_KEY_PEM: keys.privateKeyPem,
  CODEHOST_WEBHOOK_SECRET: 'whsec',
  CODEHOST_API_URL: apiUrl,
  SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://indexer.local/{install}/{repo}',
  SERVICE_ADMIN_ENDPOINTS: '1',
  SERVICE_ADMIN_API_TOKEN: adminToken,
});

async function edge(env: Record<string, string>): Promise<CodehostEdge> {
  const e = await codehostEdge(env);
  edges.push(e);
  return e;
}

beforeAll(async () => {
  gh = await FakeGitHub.start(appId, keys.publicKeyPem);
  full = await edge(settings(gh.url));
});
afterAll(async () => {
  await Promise.all(edges.map((e) => e.close()));
  await gh?.close();
});

let nextInstallation = 70_000 + Math.floor(Math.random() * 10_000) * 100;
function installation(): number {
  const id = ++nextInstallation;
  gh.addInstallation(id);
  return id;
}

async function tenantWithUser(e: CodehostEdge = full) {
  const t = await createTenant(e.pool, TEST_MASTER_KEY, 'acme');
  const { user_id } = await createUser(e.pool, t.tenant_id, `${randomBytes(4).toString('hex')}@acme.test`);
  return { ...t, user_id, authorization: `Bearer ${t.api_key}` };
}

function call(e: CodehostEdge, headers: Record<string, string | undefined>, body: unknown) {
  const h = Object.fromEntries(
    Object.entries({ 'content-type': 'application/json', ...headers }).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  return e.app.inject({
    method: 'POST',
    url: PATH,
    headers: h,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const body = (userId: string, installationId: number, extra: Record<string, unknown> = {}) => ({
  user_id: userId,
  github_installation_id: installationId,
  account_type: 'Organization',
  account_login: 'octo-org',
  repository_selection: 'all',
  ...extra,
});

describe('codehost admin install: gates in INTERFACE §3 order', () => {
  it('404 not_found while SERVICE_ADMIN_ENDPOINTS is not 1, whatever else is sent', async () => {
    const off = await edge({ ...settings(gh.url), SERVICE_ADMIN_ENDPOINTS: '0' });
    const t = await tenantWithUser(off);
    const res = await call(
      off,
      { 'x-service-admin-token': adminToken, authorization: t.authorization },
      body(t.user_id, installation()),
    );
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });

  it('500 not_configured when the admin token is unset, before any credential is looked at', async () => {
    const { SERVICE_ADMIN_API_TOKEN: _unset, ...env } = settings(gh.url);
    const noToken = await edge(env);
    const res = await call(noToken, {}, body(randomBytes(2).toString('hex'), 1));
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toMatchObject({ code: 'not_configured' });
  });

  it('401 for a missing, wrong or wrong-length admin token, even with a valid Bearer', async () => {
    const t = await tenantWithUser();
    for (const token of [undefined, '', `${adminToken.slice(0, -1)}x`, `${adminToken}x`, 'short']) {
      const res = await call(
        full,
        { 'x-service-admin-token': token, authorization: t.authorization },
        body(t.user_id, installation()),
      );
      expect(res.statusCode, String(token)).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it('401 for a missing or unknown Bearer key once the admin token passed', async () => {
    const t = await tenantWithUser();
    for (const authorization of [undefined, 'Bearer csk_not-a-real-key-000000', 'Basic abc']) {
      const res = await call(
        full,
        { 'x-service-admin-token': adminToken, authorization },
        body(t.user_id, installation()),
      );
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it('501 not_configured past the auth gates while the connector is off or missing a setting (§8.25)', async () => {
    const { CODEHOST_CONNECTOR_ENABLED: _flag, ...flagOff } = settings(gh.url);
    const { CODEHOST_WEBHOOK_SECRET: _secret, ...missingOne } = settings(gh.url);
    for (const env of [flagOff, missingOne]) {
      const off = await edge(env);
      const t = await tenantWithUser(off);
      const denied = await call(off, { 'x-service-admin-token': adminToken }, body(t.user_id, 1));
      expect(denied.statusCode).toBe(401);
      const res = await call(
        off,
        { 'x-service-admin-token': adminToken, authorization: t.authorization },
        'not json at all',
      );
      expect(res.statusCode).toBe(501);
      expect(res.json().error.code).toBe('not_configured');
    }
  });

  it('400 bad_request for a malformed or incomplete body (all five fields required, §8.11)', async () => {
    const t = await tenantWithUser();
    const h = { 'x-service-admin-token': adminToken, authorization: t.authorization };
    const good = body(t.user_id, installation());
    const bad: unknown[] = [
      '{"user_id":',
      [],
      ...Object.keys(good).map((k) => Object.fromEntries(Object.entries(good).filter(([f]) => f !== k))),
      { ...good, github_installation_id: '123' },
      { ...good, github_installation_id: -4 },
      { ...good, user_id: 'not-a-uuid' },
      { ...good, account_type: 'Planet' },
      { ...good, repository_selection: 'some' },
      { ...good, account_login: ' ' },
      { ...good, extra: true },
    ];
    for (const b of bad) {
      const res = await call(full, h, b);
      expect(res.statusCode, JSON.stringify(b)).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
    expect(
      gh.callsTo('POST', /access_tokens$/).filter((c) => c.path.includes(String(good.github_installation_id))),
    ).toHaveLength(0);
  });

  it('400 bad_request when user_id is not a user of the caller’s tenant', async () => {
    const t = await tenantWithUser();
    const other = await tenantWithUser();
    const h = { 'x-service-admin-token': adminToken, authorization: t.authorization };
    for (const userId of [other.user_id, '00000000-0000-4000-8000-000000000000']) {
      const res = await call(full, h, body(userId, installation()));
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
  });

  it('400 installation_not_accessible when the App cannot mint a token (404, 403 suspended, 401), nothing written', async () => {
    const t = await tenantWithUser();
    const h = { 'x-service-admin-token': adminToken, authorization: t.authorization };
    const suspended = installation();
    gh.installations.get(suspended)!.suspended = true;
    const rejected = installation();
    gh.fail({
      method: 'POST',
      path: new RegExp(`/app/installations/${rejected}/access_tokens$`),
      status: 401,
      body: { message: 'A JSON web token could not be decoded' },
    });
    for (const [id, status] of [
      [nextInstallation + 1000, 404],
      [suspended, 403],
      [rejected, 401],
    ] as const) {
      const res = await call(full, h, body(t.user_id, id));
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'installation_not_accessible', upstream_status: status });
    }
    expect(await listInstalls(full.pool, t.tenant_id)).toEqual([]);
  });

  it('502 upstream_error when GitHub fails or cannot be reached', async () => {
    const t = await tenantWithUser();
    const h = { 'x-service-admin-token': adminToken, authorization: t.authorization };
    const id = installation();
    gh.fail({ method: 'POST', path: /access_tokens$/, status: 503, body: { message: 'Service Unavailable' } });
    const res = await call(full, h, body(t.user_id, id));
    expect(res.statusCode).toBe(502);
    expect(res.json().error.code).toBe('upstream_error');

    const unreachable = await edge(settings('http://127.0.0.1:9'));
    const t2 = await tenantWithUser(unreachable);
    const res2 = await call(
      unreachable,
      { 'x-service-admin-token': adminToken, authorization: t2.authorization },
      body(t2.user_id, id),
    );
    expect(res2.statusCode).toBe(502);
    expect(res2.json().error.code).toBe('upstream_error');
    expect(await listInstalls(full.pool, t.tenant_id)).toEqual([]);
  });
});

describe('codehost admin install: success, multi-tenancy, conflict', () => {
  it('201 after a token-mint proof signed as the App; install, App installation and encrypted token in one go', async () => {
    const t = await tenantWithUser();
    const id = installation();
    const before = gh.calls.length;
    const res = await call(
      full,
      { 'x-service-admin-token': adminToken, authorization: t.authorization },
      body(t.user_id, id),
    );
    expect(res.statusCode).toBe(201);
    const created = res.json();
    expect(created).toEqual({
      install_id: expect.any(String),
      connector_id: 'codehost',
      status: 'active',
      github_installation_id: id,
    });

    const mint = gh.calls
      .slice(before)
      .filter((c) => c.method === 'POST' && c.path === `/app/installations/${id}/access_tokens`);
    expect(mint).toHaveLength(1);
    expect(mint[0]!.auth).toBe('jwt');

    const [install] = await listInstalls(full.pool, t.tenant_id, 'codehost');
    expect(install).toMatchObject({
      install_id: created.install_id,
      status: 'active',
      external_id: String(id),
      backfill: { state: 'pending' },
    });
    expect(await getAppInstallation(full.pool, t.tenant_id, created.install_id)).toMatchObject({
      github_installation_id: id,
      account_login: 'octo-org',
      account_type: 'Organization',
      repository_selection: 'all',
      app_id: appId,
    });
    const secret = await readCodehostSecret(full.pool, CredentialCipher.fromMasterKey(TEST_MASTER_KEY), {
      tenantId: t.tenant_id,
      installId: created.install_id,
    });
    expect(secret?.github_installation_id).toBe(id);
    expect(gh.tokens.has(secret!.token!.cache_value.split('|')[0]!)).toBe(true);
    // At rest the token is ciphertext only.
    const raw = await full.pool.query('SELECT ciphertext FROM credentials WHERE install_id = $1', [created.install_id]);
    expect(raw.rows[0].ciphertext.toString('latin1')).not.toContain('ghs_');
  });

  it('one installation into two tenants: both 201; the same tenant again: 409 already_installed', async () => {
    const a = await tenantWithUser();
    const b = await tenantWithUser();
    const id = installation();
    const ha = { 'x-service-admin-token': adminToken, authorization: a.authorization };
    const first = await call(full, ha, body(a.user_id, id));
    const second = await call(
      full,
      { 'x-service-admin-token': adminToken, authorization: b.authorization },
      body(b.user_id, id),
    );
    expect([first.statusCode, second.statusCode]).toEqual([201, 201]);
    expect(first.json().install_id).not.toBe(second.json().install_id);

    const again = await call(full, ha, body(a.user_id, id));
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('already_installed');
    expect(await listInstalls(full.pool, a.tenant_id)).toHaveLength(1);
  });

  it('two concurrent installs of one installation by one tenant: exactly one wins', async () => {
    const t = await tenantWithUser();
    const id = installation();
    const h = { 'x-service-admin-token': adminToken, authorization: t.authorization };
    const codes = (await Promise.all([call(full, h, body(t.user_id, id)), call(full, h, body(t.user_id, id))]))
      .map((r) => r.statusCode)
      .sort();
    expect(codes).toEqual([201, 409]);
    const rows = await full.pool.query(
      `SELECT count(*)::int AS n FROM credentials c JOIN installs i USING (install_id) WHERE i.tenant_id = $1`,
      [t.tenant_id],
    );
    expect(rows.rows[0].n).toBe(1);
  });
});

describe('codehost App installations: closed to the application role', () => {
  it('connectors_app is denied the table, reads through the service functions, and only its own tenant’s rows', async () => {
    const t = await tenantWithUser();
    const res = await call(
      full,
      { 'x-service-admin-token': adminToken, authorization: t.authorization },
      body(t.user_id, installation()),
    );
    const installId = res.json().install_id as string;

    const login = `connectors_app_test_${randomBytes(4).toString('hex')}`;
    await full.pool.query(`CREATE ROLE ${login} LOGIN IN ROLE connectors_app`);
    const url = new URL(testDatabaseUrl());
    url.username = login;
    url.password = '';
    // A member of connectors_app sees every tenant's rows (row-level security, migration 013).
    const app = new pg.Pool({ connectionString: url.toString(), max: 1 });
    try {
      await expect(app.query('SELECT * FROM codehost_app_installations')).rejects.toMatchObject({ code: '42501' });
      await expect(app.query('UPDATE codehost_app_installations SET account_login = $1', ['x'])).rejects.toMatchObject({
        code: '42501',
      });
      // Ordinary tables stay usable by the same role.
      expect((await app.query('SELECT count(*) FROM installs WHERE tenant_id = $1', [t.tenant_id])).rows[0].count).toBe(
        '1',
      );
      expect(await getAppInstallation(app, t.tenant_id, installId)).toMatchObject({
        install_id: installId,
        app_id: appId,
      });
      const stranger = await tenantWithUser();
      expect(await getAppInstallation(app, stranger.tenant_id, installId)).toBeNull();
    } finally {
      await app.end();
      await full.pool.query(`DROP ROLE ${login}`);
    }
  });
});
