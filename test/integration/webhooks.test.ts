/**
 * Webhooks to tenants (INTERFACE §10.2) on a real node: a receiver in the test checks every
 * delivery's signature with `standardwebhooks`' own `Webhook.verify`; deliveries carry the
 * tenant's changes in feed order; a 500 is retried with the same `webhook-id`; a disabled
 * webhook enabled again resumes without a gap; a rotated secret signs beside the previous
 * one; the routes answer 404 for another tenant's webhook and 204 (no body) to a delete.
 * The node allows http and loopback URLs (SERVICE_WEBHOOKS_ALLOW_*), as `dev` does.
 */
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installKey } from '../../src/actors/install-protocol.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { Router } from '../../src/runtime/router.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createInstall, setBackfill, type Install } from '../../src/store/installs.js';
import { TEST_MASTER_KEY } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

let node: TestNode;
let router: Router;
let receiver: Receiver;

beforeAll(async () => {
  node = await startTestNode({ SERVICE_WEBHOOKS_ALLOW_HTTP: '1', SERVICE_WEBHOOKS_ALLOW_PRIVATE: '1' });
  const names = makeNames(node.namespace);
  router = new Router({
    nc: node.node.nc,
    names,
    shards: node.config.shards,
    log: pino({ level: 'silent' }),
    seal: createSeal([TEST_MASTER_KEY]),
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await node?.stop();
});

async function chatInstall(tenantId: string, teamId: string): Promise<Install> {
  const inst = await createInstall(node.pool, { tenantId, connectorId: 'chatapp', externalId: teamId });
  await setBackfill(node.pool, inst.install_id, 'complete');
  return inst;
}

let ts = 1_700_100_000;
async function say(inst: Install, channel = 'C1'): Promise<void> {
  const at = `${ts++}.000100`;
  const ev: IngestEvent = {
    installId: inst.install_id,
    tenantId: inst.tenant_id,
    connectorId: 'chatapp',
    id: `message:${channel}:${at}`,
    kind: 'message',
    occurredAt: null,
    payload: { channel_id: channel, channel_type: 'channel', ts: at, user: 'U1', text: `hello ${at}` },
  };
  await router.ask(installKey(inst.install_id), { type: 'ingest', events: [ev] }, { timeoutMs: 10_000 });
}

async function call(
  auth: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> & { error?: { code: string } } }> {
  const res = await fetch(`${node.url}/api/v1/webhooks${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** The cursors of every change the receiver took (2xx), in arrival order. */
const cursorsOf = (secret: string) => receiver.delivered(secret).flatMap((d) => d.changes.map((c) => c.cursor));
const upTo = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1));

describe('webhooks to tenants', () => {
  it('delivers signed, in feed order, retries a 500 with the same webhook-id, resumes after enable', async () => {
    const t = await node.tenant('webhooks-a');
    const other = await node.tenant('webhooks-b');
    const chat = await chatInstall(t.tenant_id, 'TWHA');
    const created = await call(t.auth, 'POST', '', { url: receiver.url, description: 'test receiver' });
    expect(created.status).toBe(201);
    const { id, secret } = created.body as { id: string; secret: string };
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.body).toMatchObject({
      url: receiver.url,
      kinds: [],
      status: 'enabled',
      description: 'test receiver',
    });

    await say(chat);
    await say(chat);
    await until('six changes delivered', () => cursorsOf(secret).length >= 6);
    expect(cursorsOf(secret)).toEqual(upTo(6));
    const first = receiver.delivered(secret)[0]!;
    expect(first).toMatchObject({ type: 'graph.changed', webhook_id: id });
    expect(receiver.received[0]!.headers['content-type']).toBe('application/json');

    // A 500, then the same message again with the same id.
    const before = receiver.received.length;
    receiver.answers.push(500);
    await say(chat);
    await until('the retry taken', () => cursorsOf(secret).length >= 9, { timeoutMs: 30_000 });
    const [failed, retried] = receiver.received.slice(before);
    expect(failed!.status).toBe(500);
    expect(retried!.headers['webhook-id']).toBe(failed!.headers['webhook-id']);
    expect(retried!.body).toBe(failed!.body);
    const log = await call(t.auth, 'GET', `/${id}/deliveries?limit=2`);
    expect(
      (log.body.deliveries as Array<{ status_code: number; message_id: string }>).map((d) => d.status_code),
    ).toEqual([200, 500]);

    // Disabled, changes commit meanwhile, enabled: everything after the last delivered change, no gap.
    expect((await call(t.auth, 'PATCH', `/${id}`, { status: 'disabled' })).body.status).toBe('disabled');
    await say(chat);
    await say(chat);
    expect((await call(t.auth, 'PATCH', `/${id}`, { status: 'enabled' })).body.status).toBe('enabled');
    await until('the changes of the disabled time', () => cursorsOf(secret).length >= 15);
    expect(cursorsOf(secret)).toEqual(upTo(15));

    // Another tenant sees none of it.
    expect((await call(other.auth, 'GET', `/${id}`)).status).toBe(404);
    expect((await call(other.auth, 'PATCH', `/${id}`, { status: 'disabled' })).status).toBe(404);
    expect((await call(other.auth, 'GET', '')).body).toEqual({ webhooks: [] });
  });

  it('signs with the new and the previous secret after a rotation; deletes with 204', async () => {
    const t = await node.tenant('webhooks-rotate');
    const chat = await chatInstall(t.tenant_id, 'TWHR');
    const created = await call(t.auth, 'POST', '', { url: receiver.url, kinds: ['chat.message'] });
    const { id, secret: old } = created.body as { id: string; secret: string };
    const rotated = await call(t.auth, 'POST', `/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const fresh = (rotated.body as { secret: string }).secret;
    expect(fresh).not.toBe(old);
    const from = receiver.received.length;
    await say(chat, 'C7');
    await until('the message delivered', () =>
      receiver.received.slice(from).find((r) => r.body.includes(`"webhook_id":"${id}"`)),
    );
    const got = receiver.received.slice(from).find((r) => r.body.includes(`"webhook_id":"${id}"`))!;
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const s of [fresh, old]) {
      const body = new Webhook(s).verify(got.body, got.headers as Record<string, string>) as {
        changes: Array<{ kind: string }>;
      };
      // Only the kinds it asked for.
      expect(body.changes.map((c) => c.kind)).toEqual(['chat.message']);
    }

    const del = await fetch(`${node.url}/api/v1/webhooks/${id}`, { method: 'DELETE', headers: t.auth });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await call(t.auth, 'GET', `/${id}`)).status).toBe(404);
    expect((await call(t.auth, 'DELETE', `/${id}`)).status).toBe(404);

    // Each change is in the tenant's audit log (INTERFACE §10.5), the refused delete with its code.
    const audit = await fetch(`${node.url}/api/v1/audit?limit=10`, { headers: t.auth });
    const entries = ((await audit.json()) as { entries: Array<{ action: string; target: string; outcome: string }> })
      .entries;
    expect(entries.filter((e) => e.action === 'webhook_change').map((e) => [e.target, e.outcome])).toEqual([
      [`webhook/${id}`, 'not_found'],
      [`webhook/${id}`, 'ok'],
      [`webhook/${id}`, 'ok'],
      [`webhook/${id}`, 'ok'],
    ]);
  });

  it('refuses a URL that is not http(s) and bodies the contract does not name', async () => {
    const t = await node.tenant('webhooks-bad');
    for (const body of [
      { url: 'ftp://example.com/x' },
      { url: 'not a url' },
      { url: 'https://user:pw@example.com/' },
    ]) {
      const res = await call(t.auth, 'POST', '', body);
      expect([body.url, res.status, res.body.error?.code]).toEqual([body.url, 400, 'bad_config']);
    }
    const extra = await call(t.auth, 'POST', '', { url: receiver.url, colour: 'red' });
    expect(extra.status).toBe(400);
  });
});
