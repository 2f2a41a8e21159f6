import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const KEY = 'k'.repeat(32);
const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

function refusal(env: Record<string, string>, opts = {}): ConfigError {
  try {
    loadConfig(env, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a refusal');
}

describe('loadConfig', () => {
  it('gives the documented defaults', () => {
    const c = loadConfig({});
    expect(c.natsServers).toEqual(['nats://127.0.0.1:4222']);
    expect(c.namespace).toBe('svc');
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8080);
    expect(c.shards).toBe(64);
    expect(c.chatapp.transport).toBe('none');
    expect(c.chatapp.appTier).toBe('non_marketplace');
    expect(c.chatapp.apiUrl).toBe('https://slack.com/api/');
    expect(c.chatapp.scopes).toContain('mpim:history');
    expect(c.codehost.apiUrl).toBe('https://api.github.com');
    expect(c.codehost.enabled).toBe(false);
    expect(Object.isFrozen(c) && Object.isFrozen(c.chatapp)).toBe(true);
  });

  it.each([
    [{ SERVICE_MASTER_KEY: 'short' }, 'SERVICE_MASTER_KEY'],
    [{ SERVICE_MASTER_KEY: 'é'.repeat(15) }, 'SERVICE_MASTER_KEY'], // 30 bytes in UTF-8
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ SERVICE_NAMESPACE: 'a.b' }, 'SERVICE_NAMESPACE'],
    [{ SERVICE_NAMESPACE: 'a>' }, 'SERVICE_NAMESPACE'],
    [{ NATS_URL: 'http://x y' }, 'NATS_URL'],
    [{ NATS_URL: ' , ' }, 'NATS_URL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ CHATAPP_APP_TIER: 'gold' }, 'CHATAPP_APP_TIER'],
    [{ CHATAPP_USE_SOCKET_MODE: 'yes' }, 'CHATAPP_USE_SOCKET_MODE'],
    [{ CHATAPP_USE_SOCKET_MODE: 'true' }, 'CHATAPP_APP_TOKEN'],
    [{ CHATAPP_API_URL: 'ftp://x' }, 'CHATAPP_API_URL'],
    [{ CHATAPP_AUTHORIZE_URL: 'not a url' }, 'CHATAPP_AUTHORIZE_URL'],
    [{ CHATAPP_SCOPES: 'chat:write,DROP TABLE' }, 'CHATAPP_SCOPES'],
    [{ CODEHOST_CONNECTOR_ENABLED: 'maybe' }, 'CODEHOST_CONNECTOR_ENABLED'],
    [{ CODEHOST_APP_ID: '12a' }, 'CODEHOST_APP_ID'],
    [{ CODEHOST_APP_ID: '0' }, 'CODEHOST_APP_ID'],
    [{ CODEHOST_APP_PRIVATE_KEY_PEM: 'not a pem' }, 'CODEHOST_APP_PRIVATE_KEY_PEM'],
    [{ CODEHOST_API_URL: 'x' }, 'CODEHOST_API_URL'],
    [{ SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://x/{install}' }, 'SERVICE_INDEXER_DAEMON_URL_TEMPLATE'],
    [{ SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'file:///{install}/{repo}' }, 'SERVICE_INDEXER_DAEMON_URL_TEMPLATE'],
    [{ SERVICE_SHARDS: '0' }, 'SERVICE_SHARDS'],
    [{ SERVICE_LEASE_TTL_S: '1' }, 'SERVICE_LEASE_TTL_S'],
    [{ NODE_ID: 'has space' }, 'NODE_ID'],
  ])('refuses %j naming %s', (env, setting) => {
    const err = refusal(env as Record<string, string>);
    expect(err.setting).toBe(setting);
    expect(err.message.startsWith(`${setting}:`)).toBe(true);
  });

  it('never prints a secret value in a refusal', () => {
    const secret = 'super-secret-value';
    const err = refusal({ SERVICE_MASTER_KEY: secret });
    expect(err.message).not.toContain(secret);
    const pemErr = refusal({
      CODEHOST_APP_PRIVATE_KEY_PEM: `-----BEGIN PRIVATE KEY-----\n${secret}\n-----END PRIVATE KEY-----`,
    });
    expect(pemErr.message).not.toContain(secret);
  });

  it('requires DATABASE_URL and SERVICE_MASTER_KEY where the command needs them', () => {
    expect(refusal({}, { requireDatabase: true }).setting).toBe('DATABASE_URL');
    expect(refusal({ DATABASE_URL: 'postgres://x/y' }, { requireDatabase: true, requireMasterKey: true }).setting).toBe(
      'SERVICE_MASTER_KEY',
    );
  });

  it('chooses the chat transport: HTTP with a signing secret, Socket Mode when asked (it wins)', () => {
    expect(loadConfig({ CHATAPP_SIGNING_SECRET: 's' }).chatapp.transport).toBe('http');
    const both = loadConfig({
      CHATAPP_SIGNING_SECRET: 's',
      CHATAPP_USE_SOCKET_MODE: 'true',
      CHATAPP_APP_TOKEN: 'xapp-1',
    });
    expect(both.chatapp.transport).toBe('socket');
    expect(loadConfig({ CHATAPP_USE_SOCKET_MODE: 'false', CHATAPP_SIGNING_SECRET: 's' }).chatapp.transport).toBe(
      'http',
    );
  });

  it('enables the code host only with the flag and all five settings', () => {
    const five = {
      CODEHOST_APP_ID: '123',
      CODEHOST_APP_PRIVATE_KEY_PEM: PEM,
      CODEHOST_WEBHOOK_SECRET: 'whsec',
      SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://idx-{install}.local/{repo}/rpc',
      SERVICE_MASTER_KEY: KEY,
    };
    expect(loadConfig(five).codehost.enabled).toBe(false);
    expect(loadConfig({ ...five, CODEHOST_CONNECTOR_ENABLED: 'true' }).codehost.enabled).toBe(true);
    const partial = loadConfig({ CODEHOST_CONNECTOR_ENABLED: 'true', CODEHOST_APP_ID: '123', SERVICE_MASTER_KEY: KEY });
    expect(partial.codehost.enabled).toBe(false);
    expect(partial.codehost.missing).toEqual([
      'CODEHOST_APP_PRIVATE_KEY_PEM',
      'CODEHOST_WEBHOOK_SECRET',
      'SERVICE_INDEXER_DAEMON_URL_TEMPLATE',
    ]);
    // A PEM pasted on one line with literal \n is accepted.
    expect(loadConfig({ CODEHOST_APP_PRIVATE_KEY_PEM: PEM.replace(/\n/g, '\\n') }).codehost.privateKeyPem).toBe(PEM);
  });

  it('reads lists, admin switch and chat enablement', () => {
    const c = loadConfig({
      NATS_URL: 'nats://a:4222, nats://b:4222',
      SERVICE_ADMIN_ENDPOINTS: '1',
      CHATAPP_CLIENT_ID: 'id',
      CHATAPP_CLIENT_SECRET: 'secret',
      SERVICE_MASTER_KEY: KEY,
    });
    expect(c.natsServers).toEqual(['nats://a:4222', 'nats://b:4222']);
    expect(c.admin.endpointsEnabled).toBe(true);
    expect(loadConfig({ SERVICE_ADMIN_ENDPOINTS: 'true' }).admin.endpointsEnabled).toBe(false);
    expect(c.chatapp.enabled).toBe(true);
  });
});

describe('loadConfig: NATS and reconciliation settings (INTERFACE §9.2)', () => {
  it('defaults: anonymous, 1 replica, 1 GiB ingest stream, reconciliation every 300 s', () => {
    const c = loadConfig({});
    expect(c.nats).toMatchObject({ token: null, user: null, credsFile: null, replicas: 1, ingestMaxBytes: 1073741824 });
    expect(c.githubReconcileMs).toBe(300_000);
    expect(loadConfig({ SERVICE_GITHUB_RECONCILE_S: '0' }).githubReconcileMs).toBe(0);
  });

  it.each([
    [{ NATS_USER: 'svc' }, 'NATS_PASSWORD'],
    [{ NATS_PASSWORD: 'p' }, 'NATS_USER'],
    [{ NATS_TOKEN: 't', NATS_USER: 'u', NATS_PASSWORD: 'p' }, 'NATS_USER'],
    [{ NATS_CREDS: '/x.creds', NATS_TOKEN: 't' }, 'NATS_TOKEN'],
    [{ NATS_TLS_CERT: '/c.pem' }, 'NATS_TLS_KEY'],
    [{ NATS_TLS_KEY: '/k.pem' }, 'NATS_TLS_CERT'],
    [{ SERVICE_NATS_REPLICAS: '0' }, 'SERVICE_NATS_REPLICAS'],
    [{ SERVICE_NATS_REPLICAS: '7' }, 'SERVICE_NATS_REPLICAS'],
    [{ SERVICE_INGEST_MAX_BYTES: '1000' }, 'SERVICE_INGEST_MAX_BYTES'],
    [{ SERVICE_GITHUB_RECONCILE_S: '-1' }, 'SERVICE_GITHUB_RECONCILE_S'],
  ])('refuses %j naming %s, never a secret value', (env, setting) => {
    const err = refusal(env as Record<string, string>);
    expect(err.setting).toBe(setting);
  });
});
