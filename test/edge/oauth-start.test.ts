/** Edge: the generic `POST /api/v1/connectors/{connector_id}/oauth/start` (spec §4, INTERFACE §3). */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { chatOAuthRoutes } from '../../src/edge/routes/chatapp/oauth.js';
import { CredentialCipher } from '../../src/store/credential-cipher.js';
import { createPool } from '../../src/store/db.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { edgeFixture } from '../support/edge.js';

const INSTALL_PATH = '/api/v1/connectors/codehost/admin/install';

describe('generic oauth/start', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  beforeAll(async () => {
    f = await edgeFixture();
  });
  afterAll(() => f.close());

  it('refuses codehost with custom_install_path naming the admin install route', async () => {
    const t = await f.tenant();
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/connectors/codehost/oauth/start',
      headers: t.auth,
      payload: { redirect_uri: 'https://app.example/cb' },
    });
    expect(res.statusCode).toBe(400);
    const { error } = res.json();
    expect(error).toEqual({
      code: 'custom_install_path',
      message: expect.any(String),
      install_path: INSTALL_PATH,
      request_id: expect.any(String),
    });
    expect(error.message).toContain(INSTALL_PATH);
  });

  it('answers 404 not_found for an unknown connector', async () => {
    const t = await f.tenant();
    for (const id of ['mail', 'installs', 'CHATAPP']) {
      const res = await f.app.inject({
        method: 'POST',
        url: `/api/v1/connectors/${id}/oauth/start`,
        headers: t.auth,
        payload: {},
      });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({
        error: { code: 'not_found', message: expect.any(String), request_id: expect.any(String) },
      });
    }
  });

  it('needs the tenant Bearer key', async () => {
    for (const id of ['codehost', 'mail']) {
      const res = await f.app.inject({ method: 'POST', url: `/api/v1/connectors/${id}/oauth/start`, payload: {} });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
  });

  it('answers not_configured for chatapp when its own route is not mounted', async () => {
    const t = await f.tenant();
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/connectors/chatapp/oauth/start',
      headers: t.auth,
      payload: { redirect_uri: 'https://app.example/cb' },
    });
    expect(res.statusCode).toBe(501);
    expect(res.json().error.code).toBe('not_configured');
  });
});

describe('chatapp oauth/start beside the generic route', () => {
  let f: Awaited<ReturnType<typeof edgeFixture>>;
  const pool = createPool(testDatabaseUrl());
  beforeAll(async () => {
    const config = loadConfig({ SERVICE_MASTER_KEY: TEST_MASTER_KEY });
    const plugin = chatOAuthRoutes({
      config,
      pool,
      cipher: CredentialCipher.fromMasterKey(TEST_MASTER_KEY),
      log: pino({ level: 'silent' }),
      startBackfill: async () => {},
    });
    f = await edgeFixture(undefined, [{ plugin }]);
  });
  afterAll(async () => {
    await f.close();
    await pool.end();
  });

  it('reaches the static chatapp route first', async () => {
    const t = await f.tenant();
    // Only the chatapp route validates redirect_uri; the generic one would answer 501.
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/connectors/chatapp/oauth/start',
      headers: t.auth,
      payload: { redirect_uri: 'not a url' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('bad_request');
    const codehost = await f.app.inject({
      method: 'POST',
      url: '/api/v1/connectors/codehost/oauth/start',
      headers: t.auth,
      payload: {},
    });
    expect(codehost.json().error.code).toBe('custom_install_path');
  });
});
