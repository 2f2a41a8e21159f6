/**
 * Integration (edge + Postgres, publish recorded in memory): the webhook route's contract
 * (INTERFACE §3, §8.12, §8.19; spec §8): 501 until enabled and all five settings are set,
 * signatures on the raw bytes, header and body checks, GitHub's form encoding, 25 MiB
 * bodies, fan-out to active installs only, and what `installation.deleted` changes.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstall, getInstallById, setInstallStatus, type Install } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { codehostEdge, type CodehostEdge } from '../support/github-edge.js';
import { examplePayload, forInstallation, sign } from '../support/github-harness.js';
import { generateAppKeyPair } from 'connector-service/testing';
import { TEST_MASTER_KEY } from '../support/env.js';

const PATH = '/api/v1/connectors/codehost/webhooks';
const SECRET = 'It’s a Secret to Everybody';
const keys = generateAppKeyPair();
const FIVE: Record<string, string> = {
  CODEHOST_APP_ID: '99',
  CODEHOST_APP_PRIVATE_KEY_PEM: keys.privateKeyPem,
  CODEHOST_WEBHOOK_SECRET: SECRET,
  SERVICE_INDEXER_DAEMON_URL_TEMPLATE: 'http://indexer.local/{install}/{repo}',
};
const edges: CodehostEdge[] = [];
let e: CodehostEdge;
let installation = 9_500_000 + Math.floor(Math.random() * 10_000) * 10;

beforeAll(async () => {
  e = await codehostEdge({ CODEHOST_CONNECTOR_ENABLED: 'true', CODEHOST_API_URL: 'http://127.0.0.1:9', ...FIVE });
  edges.push(e);
});
afterAll(async () => {
  await Promise.all(edges.map((x) => x.close()));
});

function post(app: CodehostEdge, raw: string | Buffer, headers: Record<string, string | undefined> = {}) {
  const h: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': 'issues',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': sign(SECRET, raw),
  };
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) delete h[k];
    else h[k] = v;
  }
  return app.app.inject({ method: 'POST', url: PATH, headers: h, payload: raw });
}

/** An installation with active installs in `n` tenants (plus noise that must not get events). */
async function boundInstalls(n: number) {
  const id = ++installation;
  const installs = [];
  for (let i = 0; i < n; i++) {
    const t = await createTenant(e.pool, TEST_MASTER_KEY, `t${i}`);
    installs.push(
      await createInstall(e.pool, { tenantId: t.tenant_id, connectorId: 'codehost', externalId: String(id) }),
    );
  }
  const t = await createTenant(e.pool, TEST_MASTER_KEY, 'noise');
  const gone = await createInstall(e.pool, { tenantId: t.tenant_id, connectorId: 'codehost', externalId: String(id) });
  await setInstallStatus(e.pool, gone.install_id, 'uninstalled');
  await createInstall(e.pool, { tenantId: t.tenant_id, connectorId: 'chatapp', externalId: String(id) });
  return { id, installs };
}

describe('codehost webhook route', () => {
  it('501 not_configured until enabled with all five settings, before the body is read', async () => {
    const variants: Array<Record<string, string>> = [{ ...FIVE }];
    for (const missing of Object.keys(FIVE)) {
      variants.push({
        CODEHOST_CONNECTOR_ENABLED: 'true',
        ...Object.fromEntries(Object.entries(FIVE).filter(([k]) => k !== missing)),
      });
    }
    for (const env of variants) {
      const off = await codehostEdge(env);
      edges.push(off);
      const huge = Buffer.alloc(26 * 1024 * 1024, 0x20);
      for (const raw of ['{}', huge]) {
        const res = await post(off, raw);
        expect(res.statusCode, JSON.stringify(Object.keys(env))).toBe(501);
        expect(res.json().error.code).toBe('not_configured');
      }
      expect(off.published).toEqual([]);
    }
  });

  it('checks the signature over the raw bytes: a re-serialised, non-UTF-8 or unsigned body is 401', async () => {
    const { id } = await boundInstalls(1);
    const raw = JSON.stringify(forInstallation(examplePayload('issues', 'opened'), id), null, 2);
    const reserialised = JSON.stringify(JSON.parse(raw));
    const latin1 = Buffer.concat([Buffer.from(raw.slice(0, -1)), Buffer.from([0xe9, 0x7d])]);
    for (const [body, signature] of [
      [reserialised, sign(SECRET, raw)],
      [latin1, sign(SECRET, latin1)],
      [raw, undefined],
    ] as const) {
      const res = await post(e, body, { 'x-hub-signature-256': signature });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('unauthorized');
    }
    expect(e.published).toEqual([]);
    expect((await post(e, raw)).statusCode).toBe(202);
  });

  it('400 bad_request for missing GitHub headers or a body that is not a JSON object', async () => {
    const raw = JSON.stringify(forInstallation(examplePayload('issues', 'opened'), 1));
    const before = e.published.length;
    for (const headers of [
      { 'x-github-event': undefined },
      { 'x-github-delivery': undefined },
      { 'x-github-event': 'Bad Event!' },
    ]) {
      const res = await post(e, raw, headers);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('bad_request');
    }
    for (const body of ['not json', '[1,2]', 'null']) {
      const res = await post(e, body);
      expect(res.statusCode).toBe(400);
    }
    expect(e.published.length).toBe(before);
  });

  it('fans out to every active code-host install of installation.id, with the event id and kind of §4', async () => {
    const { id, installs } = await boundInstalls(2);
    const payload = forInstallation(examplePayload('issues', 'opened'), id);
    const delivery = randomUUID();
    const res = await post(e, JSON.stringify(payload), { 'x-github-delivery': delivery });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ ok: true, installs: 2 });
    const mine = e.published.filter((p) => p.id === delivery);
    expect(mine.map((p) => p.installId).sort()).toEqual(installs.map((i) => i.install_id).sort());
    for (const p of mine) {
      expect(p).toMatchObject({ connectorId: 'codehost', kind: 'issues.opened', payload });
      expect(p.tenantId).toBe(installs.find((i) => i.install_id === p.installId)!.tenant_id);
    }
  });

  it('answers 503 when a publish is not acknowledged, so GitHub redelivers; the redelivery is published', async () => {
    const { id, installs } = await boundInstalls(2);
    const payload = JSON.stringify(forInstallation(examplePayload('issues', 'opened'), id));
    const delivery = randomUUID();
    // One of the two fan-out publishes fails: no 2xx until every install's copy is durable.
    e.failPublishFor.add(installs[1]!.install_id);
    try {
      const res = await post(e, payload, { 'x-github-delivery': delivery });
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('unavailable');
      expect(e.published.filter((p) => p.id === delivery && p.installId === installs[1]!.install_id)).toEqual([]);
    } finally {
      e.failPublishFor.clear();
    }
    // GitHub's redelivery carries the same X-GitHub-Delivery: now every copy is published
    // (a second copy of the one that got through is absorbed by its Nats-Msg-Id and the
    // events table's key on the real path).
    const again = await post(e, payload, { 'x-github-delivery': delivery });
    expect(again.statusCode).toBe(202);
    const copies = e.published.filter((p) => p.id === delivery).map((p) => p.installId);
    expect(new Set(copies)).toEqual(new Set(installs.map((i) => i.install_id)));
  });

  it('accepts GitHub’s form encoding, and 25 MiB bodies; more is 413', async () => {
    const { id } = await boundInstalls(1);
    const payload = forInstallation(examplePayload('push', undefined, 3), id);
    const form = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
    const delivery = randomUUID();
    const res = await post(e, form, {
      'content-type': 'application/x-www-form-urlencoded',
      'x-github-event': 'push',
      'x-github-delivery': delivery,
    });
    expect(res.statusCode).toBe(202);
    expect(e.published.find((p) => p.id === delivery)).toMatchObject({ kind: 'push', payload });

    const big = JSON.stringify({
      ...forInstallation(examplePayload('issues', 'opened'), id),
      filler: 'x'.repeat(24 * 1024 * 1024),
    });
    const bigDelivery = randomUUID();
    expect((await post(e, big, { 'x-github-delivery': bigDelivery })).statusCode).toBe(202);
    expect(e.published.some((p) => p.id === bigDelivery)).toBe(true);
    const tooBig = await post(e, `${big}${' '.repeat(1024 * 1024 + 1)}`);
    expect(tooBig.statusCode).toBe(413);
    expect(tooBig.json().error.code).toBe('payload_too_large');
  });

  it('judges the depth of a form-encoded delivery on its decoded payload (INTERFACE §9.3)', async () => {
    const { id } = await boundInstalls(1);
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    const payload = (levels: number) => `{"action":"opened","installation":{"id":${id}},"x":${nested(levels)}}`;
    const formPost = (json: string, delivery: string) =>
      post(e, `payload=${encodeURIComponent(json)}`, {
        'content-type': 'application/x-www-form-urlencoded',
        'x-github-delivery': delivery,
      });
    const deep = randomUUID();
    const res = await formPost(payload(5_000), deep);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('bad_request');
    expect(e.published.some((p) => p.id === deep)).toBe(false);
    // 128 levels in all (the payload object plus 127) still pass.
    const fine = randomUUID();
    expect((await formPost(payload(127), fine)).statusCode).toBe(202);
    expect(e.published.some((p) => p.id === fine)).toBe(true);
  });

  it('a delivery for an installation without active installs is acknowledged and stored nowhere', async () => {
    const before = e.published.length;
    const res = await post(e, JSON.stringify(forInstallation(examplePayload('issues', 'opened'), ++installation)));
    expect(res.statusCode).toBe(202);
    expect(e.published.length).toBe(before);
  });

  it('installation.deleted publishes the event, then uninstalls each install locally and refreshes its actor', async () => {
    const { id, installs } = await boundInstalls(2);
    const delivery = randomUUID();
    const res = await post(e, JSON.stringify(forInstallation(examplePayload('installation', 'deleted'), id)), {
      'x-github-event': 'installation',
      'x-github-delivery': delivery,
    });
    expect(res.statusCode).toBe(202);
    expect(e.published.filter((p) => p.id === delivery)).toHaveLength(2);
    for (const i of installs) {
      expect((await getInstallById(e.pool, i.install_id))?.status).toBe('uninstalled');
      expect(e.asked).toContainEqual({ key: { kind: 'install', id: [i.install_id] }, msg: { type: 'refresh' } });
    }
  });

  it('installation suspend and unsuspend never overwrite a status another path wrote meanwhile', async () => {
    const { id, installs } = await boundInstalls(2);
    const [gone, kept] = installs as [Install, Install];
    const lifecycle = (action: 'suspend' | 'unsuspend') => {
      const p = forInstallation(examplePayload('installation', 'deleted'), id);
      return post(e, JSON.stringify({ ...p, action }), {
        'x-github-event': 'installation',
        'x-github-delivery': randomUUID(),
      });
    };
    // A tenant's DELETE of one of them commits while the suspend webhook is being stored.
    e.beforePublish = async (event) => {
      if (event.installId === gone.install_id) await setInstallStatus(e.pool, gone.install_id, 'uninstalled');
    };
    try {
      expect((await lifecycle('suspend')).statusCode).toBe(202);
    } finally {
      e.beforePublish = null;
    }
    expect((await getInstallById(e.pool, gone.install_id))?.status).toBe('uninstalled');
    expect((await getInstallById(e.pool, kept.install_id))?.status).toBe('suspended');
    // So the unsuspend brings back only the suspended one: the uninstalled one stays uninstalled.
    expect((await lifecycle('unsuspend')).statusCode).toBe(202);
    expect((await getInstallById(e.pool, gone.install_id))?.status).toBe('uninstalled');
    expect((await getInstallById(e.pool, kept.install_id))?.status).toBe('active');
  });
});
