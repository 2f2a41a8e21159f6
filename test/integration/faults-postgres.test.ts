/**
 * Integration, INTERFACE §9.3: Postgres stalls (a TCP proxy in front of it stops
 * forwarding). Each request path answers 503 `unavailable` within its bound instead of
 * hanging: the chat events route within Slack's 3 s, the webhook route, a tenant GET and
 * `/readyz` within 3 s. Once the proxy forwards again the node recovers within 15 s, and
 * every event it acknowledged meanwhile is stored.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { testDatabaseUrl } from '../support/env.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

const SLACK_SECRET = 'slack-signing-secret-for-stall-tests';
let proxy: TcpProxy;
let h: CodehostHarness;
let t: Awaited<ReturnType<CodehostHarness['tenant']>>;
let installId: string;
const P = 7_600_000 + Math.floor(Math.random() * 1000);

beforeAll(async () => {
  const db = new URL(testDatabaseUrl());
  proxy = await startTcpProxy(db.hostname, Number(db.port || 5432));
  const viaProxy = new URL(db);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  h = await startCodehostHarness({
    DATABASE_URL: viaProxy.toString(),
    CHATAPP_CLIENT_ID: 'cid',
    CHATAPP_CLIENT_SECRET: 'csecret',
    CHATAPP_SIGNING_SECRET: SLACK_SECRET,
  });
  t = await h.tenant('stall');
  installId = await h.install(t, P);
});
afterAll(async () => {
  proxy?.resume();
  await h?.stop();
  await proxy?.close();
});

async function timed(what: Promise<Response>): Promise<{ status: number; code: string | null; ms: number }> {
  const started = performance.now();
  const res = await what;
  const body = (await res.json().catch(() => null)) as { error?: { code?: string } } | null;
  return { status: res.status, code: body?.error?.code ?? null, ms: performance.now() - started };
}

function slackEvent(): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: 'TSTALL',
    event_id: `Ev${Date.now()}`,
    event: { type: 'message', channel: 'C1', user: 'U1', text: 'hi', ts: '1700000000.000100' },
  });
  const ts = String(Math.floor(Date.now() / 1000));
  const sig = createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex');
  return {
    body,
    headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': ts, 'x-slack-signature': `v0=${sig}` },
  };
}

describe('Postgres stalled', () => {
  it('answers 503 within bounds on every request path, recovers, and stores every acknowledged event', async () => {
    // Warm: this installation's fan-out list is cached, so its webhooks need no Postgres.
    const warmIds: string[] = [];
    const deliverWarm = async () => {
      const id = `warm-${P}-${warmIds.length}`;
      const res = await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), P), { delivery: id });
      if (res.status === 202) warmIds.push(id);
      return res.status;
    };
    expect(await deliverWarm()).toBe(202);

    proxy.pause();
    try {
      const events = slackEvent();
      const [chat, cold, tenantGet, ready] = await Promise.all([
        timed(fetch(`${h.node.url}/api/v1/connectors/chatapp/events`, { method: 'POST', ...events })),
        // A cold installation: its fan-out lookup needs Postgres.
        timed(h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), P + 1))),
        timed(fetch(`${h.node.url}/api/v1/connectors/installs/${installId}`, { headers: t.auth })),
        timed(fetch(`${h.node.url}/readyz`)),
      ]);
      console.log(
        `figures: stalled Postgres: chat ${chat.status} in ${chat.ms.toFixed(0)} ms, webhook ` +
          `${cold.status} in ${cold.ms.toFixed(0)} ms, tenant GET ${tenantGet.status} in ` +
          `${tenantGet.ms.toFixed(0)} ms, readyz ${ready.status} in ${ready.ms.toFixed(0)} ms`,
      );
      expect(chat).toMatchObject({ status: 503, code: 'unavailable' });
      expect(chat.ms).toBeLessThan(3_000);
      expect(cold).toMatchObject({ status: 503, code: 'unavailable' });
      expect(tenantGet).toMatchObject({ status: 503, code: 'unavailable' });
      expect(ready.status).toBe(503);
      for (const r of [cold, tenantGet, ready]) expect(r.ms).toBeLessThan(3_000);
      // JetStream still takes what needs no Postgres: acknowledged now, stored after.
      for (let i = 0; i < 3; i++) expect([202, 503]).toContain(await deliverWarm());
    } finally {
      proxy.resume();
    }
    const resumedAt = Date.now();
    await until('ready again', async () => (await fetch(`${h.node.url}/readyz`)).status === 200, { timeoutMs: 15_000 });
    await until(
      'every acknowledged event stored',
      async () => {
        const stored = new Set(await h.eventIds(t, installId));
        return warmIds.every((id) => stored.has(id));
      },
      { timeoutMs: 15_000 },
    );
    console.log(
      `figures: recovered ${Date.now() - resumedAt} ms after the proxy resumed; ` +
        `${warmIds.length} acknowledged events stored`,
    );
    expect(warmIds.length).toBeGreaterThan(1);
  }, 60_000);
});
