/** Chat uninstall (spec §3.1; INTERFACE §3 DELETE, §8.3). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { install, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';

let s: ChatStack;
beforeAll(async () => {
  s = await startChatStack();
});
afterAll(() => s?.stop());

const del = (tenant: Tenant, id: string) =>
  fetch(`${s.node.url}/api/v1/connectors/installs/${id}`, { method: 'DELETE', headers: tenant.auth });
const getInstall = async (tenant: Tenant, id: string) =>
  json(await fetch(`${s.node.url}/api/v1/connectors/installs/${id}`, { headers: tenant.auth }));
const claimOf = async (teamId: string) =>
  (await s.node.pool.query('SELECT install_id FROM chat_workspace_claims WHERE team_id = $1', [teamId])).rows;
const liveCredentials = async (id: string) =>
  (await s.node.pool.query('SELECT 1 FROM credentials WHERE install_id = $1 AND revoked_at IS NULL', [id])).rows.length;
/** A bot token of the team that still works at Slack (not revoked, not expired). */
const botToken = (teamId: string) =>
  [...s.slack.tokens.values()].find(
    (t) =>
      t.teamId === teamId && t.kind === 'bot' && !t.revoked && (t.expiresAt === undefined || t.expiresAt > Date.now()),
  );

describe('chatapp uninstall', () => {
  it('revokes upstream, then status, credentials and claim change together; a reinstall works', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    const token = botToken(team.id)!;

    const res = await del(tenant, install_id);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ install_id, status: 'uninstalled' });
    expect(token.revoked).toBe(true);
    expect(s.slack.callsOf('auth.revoke')).toHaveLength(1);
    expect((await getInstall(tenant, install_id)).status).toBe('uninstalled');
    expect(await claimOf(team.id)).toEqual([]);
    expect(await liveCredentials(install_id)).toBe(0);
    // Idempotent: the same answer, no second upstream call.
    expect(await json(await del(tenant, install_id))).toEqual({ install_id, status: 'uninstalled' });
    expect(s.slack.callsOf('auth.revoke')).toHaveLength(1);
    const health = await json(
      await fetch(`${s.node.url}/api/v1/connectors/installs/${install_id}/health`, { headers: tenant.auth }),
    );
    expect(health.status).toBe('uninstalled');

    // Reinstall of the same workspace, by another tenant even.
    const other = await s.node.tenant('other');
    const again = await installOk(s, other, team.id);
    expect(again.install_id).not.toBe(install_id);
    expect(await claimOf(team.id)).toEqual([{ install_id: again.install_id }]);
  });

  it('surfaces a failed local transaction after a successful revoke, and a retry converges', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    // Make this install's claim impossible to delete, so the uninstall transaction fails after auth.revoke.
    const fn = `fail_claim_${install_id.replace(/-/g, '')}`;
    await s.node.pool.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF OLD.install_id = '${install_id}' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN OLD; END $$`);
    await s.node.pool.query(
      `CREATE TRIGGER ${fn} BEFORE DELETE ON chat_workspace_claims FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
    );
    try {
      const failed = await del(tenant, install_id);
      expect(failed.status).toBe(500);
      expect(botToken(team.id)).toBeUndefined();
      // Nothing changed locally.
      expect((await getInstall(tenant, install_id)).status).toBe('active');
      expect(await claimOf(team.id)).toEqual([{ install_id }]);
      expect(await liveCredentials(install_id)).toBe(1);
    } finally {
      await s.node.pool.query(`DROP TRIGGER ${fn} ON chat_workspace_claims`);
      await s.node.pool.query(`DROP FUNCTION ${fn}()`);
    }
    const revokesBefore = s.slack.callsOf('auth.revoke').length;
    const retried = await del(tenant, install_id);
    expect(retried.status).toBe(200);
    // The retry asked Slack again; the dead token's answer counted as revoked.
    expect(
      s.slack
        .callsOf('auth.revoke')
        .slice(revokesBefore)
        .map((c) => c.error),
    ).toEqual(['token_revoked']);
    expect((await getInstall(tenant, install_id)).status).toBe('uninstalled');
    expect(await claimOf(team.id)).toEqual([]);
    expect(await liveCredentials(install_id)).toBe(0);
  });

  it('answers 502 and changes nothing when Slack refuses the revoke for another reason', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    s.slack.rateLimit('auth.revoke', 30);
    const res = await del(tenant, install_id);
    expect(res.status).toBe(502);
    expect((await json(res)).error.code).toBe('upstream_error');
    expect((await getInstall(tenant, install_id)).status).toBe('active');
    expect(await claimOf(team.id)).toEqual([{ install_id }]);
    expect(botToken(team.id)).toBeDefined();
  });

  it('with token rotation, refreshes an expired token first so the revoke really ends access', async () => {
    const team = s.slack.addTeam({ rotationExpiresInS: 1 });
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    // The token expires on the fake Slack's real clock.
    await new Promise((r) => setTimeout(r, 1_100));
    const refreshes = s.slack.refreshes.length;
    const res = await del(tenant, install_id);
    expect(res.status).toBe(200);
    expect(s.slack.refreshes.length).toBe(refreshes + 1);
    expect(s.slack.callsOf('auth.revoke').at(-1)!.error).toBeUndefined();
    expect(botToken(team.id)).toBeUndefined();
  });

  it('app_uninstalled then tokens_revoked uninstall locally without calling Slack', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    const revokes = s.slack.callsOf('auth.revoke').length;
    expect((await s.slack.deliver(team.id, { type: 'app_uninstalled' })).status).toBe(200);
    expect((await getInstall(tenant, install_id)).status).toBe('uninstalled');
    expect(await claimOf(team.id)).toEqual([]);
    expect(await liveCredentials(install_id)).toBe(0);
    const second = await s.slack.deliver(team.id, { type: 'tokens_revoked', tokens: { bot: [team.botUserId] } });
    expect(second.status).toBe(200);
    expect(s.slack.callsOf('auth.revoke')).toHaveLength(revokes);
    // The install actor was told: an emit now sees the install inactive.
    const emit = await fetch(`${s.node.url}/api/v1/connectors/installs/${install_id}/emit`, {
      method: 'POST',
      headers: { ...tenant.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'chatapp.message', body: { channel_id: 'C123', text: 'hi' } }),
    });
    expect(emit.status).toBe(409);
    expect((await json(emit)).error.code).toBe('install_not_active');
    await installOk(s, tenant, team.id);
  });

  it('tokens_revoked then app_uninstalled works too; a user-token revocation alone changes nothing', async () => {
    const team = s.slack.addTeam();
    const tenant = await s.node.tenant();
    const { install_id } = await installOk(s, tenant, team.id);
    expect(
      (await s.slack.deliver(team.id, { type: 'tokens_revoked', tokens: { oauth: ['U0SOMEONE'], bot: [] } })).status,
    ).toBe(200);
    expect((await getInstall(tenant, install_id)).status).toBe('active');
    expect(
      (await s.slack.deliver(team.id, { type: 'tokens_revoked', tokens: { oauth: [], bot: [team.botUserId] } })).status,
    ).toBe(200);
    await until(
      'the install uninstalled',
      async () => (await getInstall(tenant, install_id)).status === 'uninstalled',
      {
        timeoutMs: 5_000,
      },
    );
    expect((await s.slack.deliver(team.id, { type: 'app_uninstalled' })).status).toBe(200);
    expect(await claimOf(team.id)).toEqual([]);
    const res = await install(s, tenant, team.id);
    expect(res.status).toBe(200);
  });
});
