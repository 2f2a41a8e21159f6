/**
 * Integration, INTERFACE §9.3: NATS stalls (a TCP proxy between the node and its NATS server
 * stops forwarding; the connection stays open, nothing answers). The routes that ask an actor
 * or publish to JetStream answer 503 `unavailable` within 3 s: emit, a node action, health and
 * DELETE (actor asks over NATS: each waits its actor's answer only while NATS still answers a
 * PING within the request's 2 s) and a webhook (its JetStream publish). Once the proxy forwards
 * again the node serves them again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { answersDuring, installWithPr, proxied, warmed } from '../support/stalled-routes.js';
import { testNatsUrl } from '../support/env.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

let proxy: TcpProxy;
let h: CodehostHarness;
let t: Awaited<ReturnType<CodehostHarness['tenant']>>;
let installId: string;
let prId: string;
const P = 7_800_000 + Math.floor(Math.random() * 1000);

beforeAll(async () => {
  const via = await proxied(testNatsUrl(), 4222);
  proxy = via.proxy;
  h = await startCodehostHarness({ NATS_URL: via.url });
  ({ t, installId, prId } = await installWithPr(h, 'nats-stall', P));
}, 60_000);
afterAll(async () => {
  proxy?.resume();
  await h?.stop();
  await proxy?.close();
});

const calls = () => ({
  emit: () =>
    h.api(`/api/v1/connectors/installs/${installId}/emit`, t, {
      body: {
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'Codertocat/Hello-World', issue_number: 2, body: 'x' },
      },
    }),
  action: () => h.api(`/api/v1/graph/nodes/${prId}/actions`, t, { body: { action: 'label', labels: ['stalled'] } }),
  health: () => h.api(`/api/v1/connectors/installs/${installId}/health`, t),
  webhook: () => h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), P)),
  // Last: it would uninstall the install the others use if it got through.
  delete: () => h.api(`/api/v1/connectors/installs/${installId}`, t, { method: 'DELETE' }),
});

describe('NATS stalled', () => {
  it('the routes that ask an actor or publish answer 503 within 3 s, then work again', async () => {
    const { delete: _last, ...warm } = calls();
    await warmed(warm, 'before the stall');
    const answers = await answersDuring('stalled NATS', calls(), {
      begin: () => proxy.pause(),
      end: () => proxy.resume(),
    });
    for (const [name, r] of Object.entries(answers)) {
      expect({ name, status: r.status, code: r.code }).toEqual({ name, status: 503, code: 'unavailable' });
      expect(r.ms, name).toBeLessThan(3_000);
    }
    await until(
      'health answers again',
      async () => (await h.api(`/api/v1/connectors/installs/${installId}/health`, t)).status === 200,
      { timeoutMs: 20_000 },
    );
  }, 60_000);
});
