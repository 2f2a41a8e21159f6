/** Chat install through the HTTP API against the fake Slack (spec §5; INTERFACE §3). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { botCredentials } from '../../src/connectors/chatapp/bot-token.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { loadKeyring } from '../../src/store/data-keys.js';
import { getInstallById } from '../../src/store/installs.js';
import {
  chatEnv,
  consent,
  install,
  installOk,
  json,
  oauthStart,
  startChatStack,
  type ChatStack,
} from '../support/slack-harness.js';
import { TEST_MASTER_KEY } from '../support/env.js';

let s: ChatStack;
beforeAll(async () => {
  s = await startChatStack();
});
afterAll(() => s?.stop());

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${s.node.url}${path}`, { headers });

describe('chatapp oauth/start', () => {
  it('requires a Bearer key and an absolute http(s) redirect_uri', async () => {
    const tenant = await s.node.tenant();
    const noAuth = await fetch(`${s.node.url}/api/v1/connectors/chatapp/oauth/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uri: 'https://example.test/cb' }),
    });
    expect(noAuth.status).toBe(401);
    for (const redirect_uri of ['/relative', 'ftp://x.test/cb', '', 42]) {
      const res = await fetch(`${s.node.url}/api/v1/connectors/chatapp/oauth/start`, {
        method: 'POST',
        headers: { ...tenant.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uri }),
      });
      expect(res.status).toBe(400);
      expect((await json(res)).error.code).toBe('bad_request');
    }
  });

  it('answers an authorize_url on CHATAPP_AUTHORIZE_URL with client id, scopes, redirect URI and a 10-minute state', async () => {
    const tenant = await s.node.tenant();
    const before = Date.now();
    const start = await oauthStart(s.node.url, tenant, 'https://installer.example/cb?x=1');
    const u = new URL(start.authorize_url);
    expect(`${u.origin}${u.pathname}`).toBe(s.slack.authorizeUrl);
    expect(u.searchParams.get('client_id')).toBe(s.slack.clientId);
    expect(u.searchParams.get('redirect_uri')).toBe('https://installer.example/cb?x=1');
    expect(u.searchParams.get('state')).toBe(start.state);
    expect(u.searchParams.get('scope')!.split(',')).toEqual(
      expect.arrayContaining(['channels:history', 'chat:write', 'mpim:history']),
    );
    const after = Date.now();
    // INTERFACE §3: the state expires 10 minutes after it was issued, which was between before and after.
    const expires = Date.parse(start.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 10 * 60_000 - 1);
    expect(expires).toBeLessThanOrEqual(after + 10 * 60_000 + 1);
  });
});

describe('chatapp oauth/callback', () => {
  it('installs: exchanges the code, stores encrypted credentials, claims the workspace, starts backfill', async () => {
    const team = s.slack.addTeam({ name: 'Acme' });
    const tenant = await s.node.tenant();
    const res = await install(s, tenant, team.id);
    const body = await json(res);
    expect(res.status).toBe(200);
    expect(body).toEqual({
      install_id: expect.any(String),
      connector_id: 'chatapp',
      status: 'active',
      team_id: team.id,
      team_name: 'Acme',
    });
    // The exchange used the same redirect_uri the state was bound to (the fake checks it).
    expect(s.slack.callsOf('oauth.v2.access').at(-1)).toMatchObject({ status: 200 });

    const listed = await json(await get('/api/v1/connectors/installs?connector_id=chatapp', tenant.auth));
    expect(listed.installs).toEqual([
      expect.objectContaining({
        install_id: body.install_id,
        external_id: team.id,
        status: 'active',
        display_name: 'Acme',
      }),
    ]);
    const one = await json(await get(`/api/v1/connectors/installs/${body.install_id}`, tenant.auth));
    expect(['pending', 'running', 'complete']).toContain(one.backfill.state);

    const token = [...s.slack.tokens.values()].find((t) => t.teamId === team.id && t.kind === 'bot')!.token;
    const { rows } = await s.node.pool.query('SELECT ciphertext FROM credentials WHERE install_id = $1', [
      body.install_id,
    ]);
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0].ciphertext).includes(Buffer.from(token))).toBe(false);
    const claim = await s.node.pool.query('SELECT install_id FROM chat_workspace_claims WHERE team_id = $1', [team.id]);
    expect(claim.rows).toEqual([{ install_id: body.install_id }]);
    const id = await s.node.pool.query(
      'SELECT bot_user_id, bot_id, app_id FROM chat_bot_identities WHERE install_id = $1',
      [body.install_id],
    );
    expect(id.rows).toEqual([{ bot_user_id: team.botUserId, bot_id: team.botId, app_id: s.slack.appId }]);

    const health = await json(await get(`/api/v1/connectors/installs/${body.install_id}/health`, tenant.auth));
    expect(health).toMatchObject({
      install_id: body.install_id,
      connector_id: 'chatapp',
      status: 'healthy',
      team_id: team.id,
    });
  });

  it('refuses a reused, forged, missing or expired state with invalid_state', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    s.slack.setConsent(team.id);
    const start = await oauthStart(s.node.url, tenant);
    const callback = await consent(start.authorize_url);
    expect((await fetch(callback)).status).toBe(200);
    const reused = await fetch(callback);
    expect(reused.status).toBe(400);
    expect((await json(reused)).error.code).toBe('invalid_state');

    const forged = new URL(callback);
    forged.searchParams.set('state', 'A'.repeat(43));
    const f = await fetch(forged);
    expect(f.status).toBe(400);
    expect((await json(f)).error.code).toBe('invalid_state');
    forged.searchParams.delete('state');
    expect((await json(await fetch(forged))).error.code).toBe('invalid_state');

    const other = s.slack.addTeam();
    s.slack.setConsent(other.id);
    const late = await oauthStart(s.node.url, tenant);
    const lateCallback = await consent(late.authorize_url);
    await s.node.pool.query(`UPDATE oauth_states SET expires_at = now() - interval '1 second' WHERE tenant_id = $1`, [
      tenant.tenant_id,
    ]);
    const expired = await fetch(lateCallback);
    expect(expired.status).toBe(400);
    expect((await json(expired)).error.code).toBe('invalid_state');
  });

  it('answers access_denied when the installer declines, and 502 when Slack refuses the code', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    s.slack.setConsent(team.id, { deny: true });
    const denied = await fetch(await consent((await oauthStart(s.node.url, tenant)).authorize_url));
    expect(denied.status).toBe(400);
    expect((await json(denied)).error.code).toBe('access_denied');

    s.slack.setConsent(team.id);
    const cb = new URL(await consent((await oauthStart(s.node.url, tenant)).authorize_url));
    cb.searchParams.set('code', 'not-a-code-slack-issued');
    const refused = await fetch(cb);
    expect(refused.status).toBe(502);
    const err = (await json(refused)).error;
    expect(err.code).toBe('upstream_error');
    expect(err.upstream_error).toBe('invalid_code');
    const installs = await json(await get('/api/v1/connectors/installs', tenant.auth));
    expect(installs.installs).toEqual([]);
  });

  it('lets exactly one of two tenants racing to install one workspace win; the other gets 409', async () => {
    const team = s.slack.addTeam();
    const [a, b] = [await s.node.tenant('a'), await s.node.tenant('b')];
    s.slack.setConsent(team.id);
    const cbA = await consent((await oauthStart(s.node.url, a)).authorize_url);
    const cbB = await consent((await oauthStart(s.node.url, b)).authorize_url);
    const results = await Promise.all([fetch(cbA), fetch(cbB)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409]);
    const loser = results.find((r) => r.status === 409)!;
    expect((await json(loser)).error.code).toBe('workspace_already_installed');
    const claims = await s.node.pool.query('SELECT count(*)::int AS n FROM chat_workspace_claims WHERE team_id = $1', [
      team.id,
    ]);
    expect(claims.rows[0].n).toBe(1);
    const active = await s.node.pool.query(
      `SELECT count(*)::int AS n FROM installs WHERE external_id = $1 AND status = 'active'`,
      [team.id],
    );
    expect(active.rows[0].n).toBe(1);
    // The winner's token still works: the loser's exchange revoked nothing.
    const winner = results.find((r) => r.status === 200)!;
    const w = await json(winner);
    const owner =
      w.install_id &&
      (await s.node.pool.query('SELECT tenant_id FROM installs WHERE install_id = $1', [w.install_id])).rows[0]
        .tenant_id;
    const auth = owner === a.tenant_id ? a.auth : b.auth;
    expect((await json(await get(`/api/v1/connectors/installs/${w.install_id}/health`, auth))).status).toBe('healthy');

    // The same tenant installing it again is refused the same way.
    const again = await install(s, owner === a.tenant_id ? a : b, team.id);
    expect(again.status).toBe(409);
    expect((await json(again)).error.code).toBe('workspace_already_installed');
  });

  it('refreshes a rotating token before it expires, once across concurrent callers', async () => {
    const team = s.slack.addTeam({ rotationExpiresInS: 2 });
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    const { rows } = await s.node.pool.query('SELECT 1 FROM credentials WHERE install_id = $1 AND revoked_at IS NULL', [
      install_id,
    ]);
    expect(rows).toHaveLength(1);
    // Past half the token's life: the next users must refresh it, and only one may.
    await new Promise((r) => setTimeout(r, 1_200));
    const before = s.slack.refreshes.length;
    const healths = await Promise.all(
      Array.from({ length: 4 }, () =>
        get(`/api/v1/connectors/installs/${install_id}/health`, tenant.auth).then((r) => json(r)),
      ),
    );
    for (const h of healths) expect(h.status).toBe('healthy');
    expect(s.slack.refreshes.length - before).toBe(1);
    // No call ever reached Slack with an expired token.
    expect(s.slack.calls.filter((c) => c.error === 'token_expired')).toEqual([]);
  });

  it('lets only one refresh run at a time across nodes: concurrent callers on two credential stores share it', async () => {
    const team = s.slack.addTeam({ rotationExpiresInS: 2 });
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    const install = (await getInstallById(s.node.pool, install_id))!;
    // Past half the token's life on the fake Slack's real clock: the next users must refresh it.
    await new Promise((r) => setTimeout(r, 1_100));
    // Two independent credential stores, as two nodes (or the install actor and the walker) would hold.
    const config = loadConfig({ ...chatEnv(s.slack), SERVICE_MASTER_KEY: TEST_MASTER_KEY });
    // The deployment's keyring, as a node loads it: credentials are under its data key.
    const cipher = CredentialCipher.fromMasterKeys(
      await loadKeyring(s.node.pool, { current: TEST_MASTER_KEY, previous: [] }),
    );
    const log = pino({ level: 'silent' });
    const stores = [
      botCredentials({ config, pool: s.node.pool, cipher, log }),
      botCredentials({ config, pool: s.node.pool, cipher, log }),
    ];
    const before = s.slack.refreshes.length;
    const secrets = await Promise.all(
      Array.from({ length: 6 }, (_, i) => stores[i % 2]!.get(install, AbortSignal.timeout(10_000))),
    );
    // Slack refresh tokens are single-use: a second concurrent refresh would have failed outright.
    expect(s.slack.refreshes.length - before).toBe(1);
    expect(new Set(secrets.map((x) => x.bot_token)).size).toBe(1);
    expect(Date.parse(secrets[0]!.expires_at!)).toBeGreaterThan(Date.now() + 1_000);
  });
});
