/**
 * Integration: GitHub delivery reconciliation (INTERFACE §9.4) on a real node against the
 * fake GitHub, which delivers its webhooks to the node and keeps GitHub's delivery log.
 * Deliveries that failed while the edge was unreachable are redelivered on request and
 * stored once; a failed delivery whose guid is stored is left alone; no delivery is asked
 * for twice; the counts reach /metrics.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/free-port.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { until } from '../support/until.js';
import type { SentDelivery } from '../../src/testing/github-hooks.js';
import { scrapeSample } from '../support/metrics.js';
import { startTestNode } from '../support/node.js';
import { MAX_REDELIVERIES } from '../../src/connectors/codehost/reconcile-deliveries.js';

let h: CodehostHarness;
type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
let t: Tenant;
let installId: string;
const INST = 6_100_000 + Math.floor(Math.random() * 1000);
let edgeUrl: string;

beforeAll(async () => {
  h = await startCodehostHarness({ SERVICE_GITHUB_RECONCILE_S: '1' });
  t = await h.tenant('reconcile');
  installId = await h.install(t, INST);
  edgeUrl = `${h.node.url}/api/v1/connectors/codehost/webhooks`;
  h.gh.hooks.target = { url: edgeUrl, secret: h.secret };
});
afterAll(async () => {
  await h?.stop();
});

const issue = (n: number) => {
  const p = forInstallation(examplePayload('issues', 'opened'), INST);
  (p.issue as { number: number }).number = 9000 + n;
  return p;
};

describe('GitHub delivery reconciliation', () => {
  it('brings in deliveries that failed while the edge was unreachable, asking once per failure', async () => {
    const ok = await h.gh.hooks.send('issues', issue(0));
    expect(ok.status_code).toBe(202);

    // The edge is unreachable: GitHub records status code 0 and never retries by itself.
    h.gh.hooks.target = {
      url: `http://127.0.0.1:${await freePort()}/api/v1/connectors/codehost/webhooks`,
      secret: h.secret,
    };
    const failed: SentDelivery[] = [];
    for (let i = 1; i <= 3; i++) failed.push(await h.gh.hooks.send('issues', issue(i)));
    expect(failed.map((d) => d.status_code)).toEqual([0, 0, 0]);
    // A delivery the edge stored although GitHub saw it fail (it timed out waiting): nothing to ask.
    const late = randomUUID();
    expect((await h.deliver('issues', issue(4), { delivery: late })).status).toBe(202);
    await until('the late delivery stored', async () => (await h.eventIds(t, installId)).includes(late), {
      timeoutMs: 30_000,
    });
    const storedButFailed = h.gh.hooks.recordTimedOut('issues', issue(4), late);

    h.gh.hooks.target = { url: edgeUrl, secret: h.secret };
    await until(
      'every failed delivery stored',
      async () => {
        const ids = await h.eventIds(t, installId);
        return failed.every((d) => ids.includes(d.guid)) && ids;
      },
      { timeoutMs: 60_000 },
    );
    const ids = await h.eventIds(t, installId);
    for (const d of [ok, ...failed]) expect(ids.filter((x) => x === d.guid)).toHaveLength(1);

    const requests = h.gh.hooks.redeliveryRequests;
    expect(new Set(requests).size).toBe(requests.length); // at most once per failed delivery
    expect(requests).not.toContain(storedButFailed.id);
    expect(requests).not.toContain(ok.id);
    for (const d of failed)
      expect(requests.some((id) => h.gh.hooks.deliveries.find((x) => x.id === id)?.guid === d.guid)).toBe(true);

    // Later passes ask for nothing more once every guid is stored.
    const asked = requests.length;
    const jwtCalls = () => h.gh.callsTo('GET', /^\/app\/hook\/deliveries$/).length;
    const listed = jwtCalls();
    await until('two more passes', async () => jwtCalls() >= listed + 2, { timeoutMs: 30_000 });
    expect(h.gh.hooks.redeliveryRequests.length).toBe(asked);

    const redelivered = await scrapeSample(h.node.url, 'connector_service_github_reconcile_deliveries_total', {
      result: 'redelivered',
    });
    expect(redelivered).toBe(asked);
    const foundFailed = await scrapeSample(h.node.url, 'connector_service_github_reconcile_deliveries_total', {
      result: 'found_failed',
    });
    expect(foundFailed).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('asks for a delivery the service keeps failing a bounded number of times, then counts it given up', async () => {
    const closed = `http://127.0.0.1:${await freePort()}/api/v1/connectors/codehost/webhooks`;
    h.gh.hooks.target = { url: closed, secret: h.secret };
    try {
      const failing = await h.gh.hooks.send('issues', issue(20));
      expect(failing.status_code).toBe(0);
      const asksFor = () =>
        h.gh.hooks.redeliveryRequests.filter(
          (id) => h.gh.hooks.deliveries.find((x) => x.id === id)?.guid === failing.guid,
        ).length;
      const givenUp = () =>
        scrapeSample(h.node.url, 'connector_service_github_reconcile_deliveries_total', { result: 'given_up' });
      await until('the delivery given up', async () => (await givenUp()) >= 1, { timeoutMs: 90_000 });
      expect(asksFor()).toBe(MAX_REDELIVERIES);
      // Later passes leave it alone.
      const listed = h.gh.callsTo('GET', /^\/app\/hook\/deliveries$/).length;
      await until(
        'two more passes',
        async () => h.gh.callsTo('GET', /^\/app\/hook\/deliveries$/).length >= listed + 2,
        { timeoutMs: 30_000 },
      );
      expect(asksFor()).toBe(MAX_REDELIVERIES);
    } finally {
      h.gh.hooks.target = { url: edgeUrl, secret: h.secret };
    }
  }, 120_000);

  it('runs on exactly one node of the cluster, and another takes it over when that node goes', async () => {
    const c = h.node.config;
    const second = await startTestNode({
      SERVICE_NAMESPACE: h.node.namespace,
      CODEHOST_CONNECTOR_ENABLED: 'true',
      CODEHOST_APP_ID: String(h.appId),
      CODEHOST_APP_PRIVATE_KEY_PEM: c.codehost.privateKeyPem!,
      CODEHOST_WEBHOOK_SECRET: h.secret,
      CODEHOST_API_URL: h.gh.url,
      SERVICE_INDEXER_DAEMON_URL_TEMPLATE: c.codehost.indexerUrlTemplate!,
      SERVICE_GITHUB_RECONCILE_S: '1',
    });
    try {
      const runners = async (url: string) =>
        scrapeSample(url, 'connector_service_actors_active', { kind: 'codehost-reconcile' });
      const listings = () => h.gh.callsTo('GET', /^\/app\/hook\/deliveries$/).length;
      const before = listings();
      await until('passes go on after the rebalance', async () => listings() >= before + 3, { timeoutMs: 90_000 });
      const counts = [await runners(h.node.url), await runners(second.url)];
      expect(counts.sort()).toEqual([0, 1]);

      // The node running it stops: the other one takes the shard, and the passes go on there.
      const both = [
        { url: h.node.url, stop: () => h.node.node.stop() },
        { url: second.url, stop: () => second.node.stop() },
      ];
      const running = (await runners(both[0]!.url)) === 1 ? 0 : 1;
      await both[running]!.stop();
      const survivor = both[1 - running]!;
      await until('the survivor runs it', async () => (await runners(survivor.url)) === 1, { timeoutMs: 90_000 });
      const after = listings();
      await until('passes go on on the survivor', async () => listings() >= after + 2, { timeoutMs: 90_000 });
    } finally {
      await second.node.stop();
      await second.pool.end();
    }
  }, 300_000);
});
