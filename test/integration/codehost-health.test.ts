/**
 * Integration: code-host health in its three states (spec §3.3, §4.5; INTERFACE §3, §8.1,
 * §8.12, §8.13) through the real route and install actor: `skeleton` on a node where the
 * connector is off, `healthy` after the App round trip, 503 with GitHub's message when no
 * token can be minted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstall } from '../../src/store/installs.js';
import { startCodehostHarness, type CodehostHarness } from '../support/github-harness.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
let off: TestNode;
type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
let t: Tenant;
let next = 8_400_000 + Math.floor(Math.random() * 1000) * 10;

beforeAll(async () => {
  [h, off] = await Promise.all([
    startCodehostHarness(),
    // INTERFACE §8.12: enabled but missing settings starts, and health answers skeleton.
    startTestNode({ CODEHOST_CONNECTOR_ENABLED: 'true', CODEHOST_APP_ID: '1' }),
  ]);
  t = await h.tenant('health');
});
afterAll(async () => {
  await Promise.all([h?.stop(), off?.stop()]);
});

const health = async (installId: string, node = h.node, auth = t.auth) => {
  const res = await fetch(`${node.url}/api/v1/connectors/installs/${installId}/health`, { headers: auth });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
};

/**
 * The admin install starts the PR-diff backfill; its GitHub calls are done once it has ended. A step
 * under way when an install is uninstalled still finishes its call (what it finds is not stored,
 * spec §3.1), so a test that counts GitHub calls waits for the walk first.
 */
const backfillSettled = (installId: string) =>
  until(
    `backfill of ${installId} ended`,
    async () => {
      const res = await fetch(`${h.node.url}/api/v1/connectors/installs/${installId}`, { headers: t.auth });
      const state = ((await res.json()) as { backfill?: { state?: string } }).backfill?.state;
      return state === 'complete' || state === 'failed';
    },
    { timeoutMs: 20_000 },
  );

describe('codehost health', () => {
  it('skeleton while the connector is not enabled and fully configured', async () => {
    const tenant = await off.tenant('skeleton');
    const install = await createInstall(off.pool, {
      tenantId: tenant.tenant_id,
      connectorId: 'codehost',
      externalId: '12345',
    });
    expect(await health(install.install_id, off, tenant.auth)).toEqual({
      status: 200,
      json: { install_id: install.install_id, connector_id: 'codehost', status: 'skeleton' },
    });
    const hook = await fetch(`${off.url}/api/v1/connectors/codehost/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(hook.status).toBe(501);
    const emit = await fetch(`${off.url}/api/v1/connectors/installs/${install.install_id}/emit`, {
      method: 'POST',
      headers: { ...tenant.auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'o/r', issue_number: 1, body: 'x' },
      }),
    });
    expect(emit.status).toBe(501);
    expect(((await emit.json()) as { error: { code: string } }).error.code).toBe('not_configured');
  });

  it('healthy with github_installation_id after GET /app and GET /app/installations/{id} as the App', async () => {
    const id = ++next;
    const installId = await h.install(t, id);
    await backfillSettled(installId);
    const before = h.gh.calls.length;
    const r = await health(installId);
    expect(r).toMatchObject({
      status: 200,
      json: { install_id: installId, connector_id: 'codehost', status: 'healthy', github_installation_id: id },
    });
    const calls = h.gh.calls.slice(before).map((c) => `${c.method} ${c.path} ${c.auth}`);
    // The backfill left a valid cached token: health reuses it, and still proves the installation.
    expect(calls).toEqual(['GET /app jwt', `GET /app/installations/${id} jwt`]);
    const again = h.gh.calls.length;
    expect((await health(installId)).status).toBe(200);
    expect(h.gh.calls.slice(again).filter((c) => c.path.endsWith('/access_tokens'))).toEqual([]);
  });

  it('mints a token when the cached one is about to expire', async () => {
    const id = ++next;
    // Tokens that live less than the refresh margin are never reused.
    const ttl = h.gh.tokenTtlMs;
    h.gh.tokenTtlMs = 1_000;
    try {
      const installId = await h.install(t, id);
      await backfillSettled(installId);
      const before = h.gh.calls.length;
      expect((await health(installId)).status).toBe(200);
      expect(h.gh.calls.slice(before).map((c) => `${c.method} ${c.path}`)).toContain(
        `POST /app/installations/${id}/access_tokens`,
      );
    } finally {
      h.gh.tokenTtlMs = ttl;
    }
  });

  it('503 unavailable with GitHub’s message when the token cannot be minted (suspended, gone)', async () => {
    const suspended = ++next;
    const suspendedInstall = await h.install(t, suspended);
    h.gh.installations.get(suspended)!.suspended = true;
    const r = await health(suspendedInstall);
    expect(r.status).toBe(503);
    expect(r.json.error.code).toBe('unavailable');
    expect(r.json.error.message).toContain('This installation has been suspended');

    const gone = ++next;
    const goneInstall = await h.install(t, gone);
    h.gh.installations.delete(gone);
    const r2 = await health(goneInstall);
    expect(r2.status).toBe(503);
    expect(r2.json.error).toMatchObject({ code: 'unavailable', upstream_status: 404 });
  });

  it('an uninstalled install answers its status without calling GitHub', async () => {
    const installId = await h.install(t, ++next);
    await backfillSettled(installId);
    expect((await h.api(`/api/v1/connectors/installs/${installId}`, t, { method: 'DELETE' })).status).toBe(200);
    const before = h.gh.calls.length;
    expect(await health(installId)).toMatchObject({ status: 200, json: { status: 'uninstalled' } });
    // The uninstall revoked the install's cached token upstream; health called nothing.
    expect(h.gh.calls.slice(before)).toEqual([]);
    expect(h.gh.callsTo('DELETE', /^\/installation\/token$/).length).toBeGreaterThanOrEqual(1);
  });
});
