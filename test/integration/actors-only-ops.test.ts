/**
 * A node without the edge (`serve --roles actors`, INTERFACE §1) is probed and scraped like any
 * other (README "Operating it": `/readyz` and `/metrics` on every node): it answers the ops
 * routes alone on PORT, `/metrics` on SERVICE_METRICS_PORT instead when that is set, and no
 * API route. Both listeners answer what they do not serve with the §2 error body and
 * `X-Request-Id` (INTERFACE §9.3), as the edge does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/free-port.js';
import { freshNamespace } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

let plain: TestNode;
let split: TestNode;
let metricsPort = 0;
beforeAll(async () => {
  plain = await startTestNode({ SERVICE_NAMESPACE: freshNamespace('actops') }, ['actors']);
  metricsPort = await freePort();
  split = await startTestNode(
    { SERVICE_NAMESPACE: freshNamespace('actopm'), SERVICE_METRICS_PORT: String(metricsPort) },
    ['actors'],
  );
});
afterAll(async () => {
  await plain?.stop();
  await split?.stop();
});

describe('an actors-only node', () => {
  it('answers /healthz, /readyz once it owns the shards, and /metrics on PORT; no API route', async () => {
    expect(plain.url).toMatch(/^http:\/\//);
    const health = await fetch(`${plain.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    await until(
      'the actors-only node ready (/readyz 200)',
      async () => (await fetch(`${plain.url}/readyz`)).status === 200,
      { timeoutMs: 15_000 },
    );
    const ready = (await (await fetch(`${plain.url}/readyz`)).json()) as { ready: boolean };
    expect(ready.ready).toBe(true);
    const metrics = await fetch(`${plain.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(new RegExp(`^connector_service_shards_owned ${plain.config.shards}$`, 'm'));
    await expectNotFound(`${plain.url}/api/v1/connectors`);
  });

  it('with SERVICE_METRICS_PORT, serves /metrics on that port only', async () => {
    expect((await fetch(`${split.url}/healthz`)).status).toBe(200);
    await expectNotFound(`${split.url}/metrics`);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: { 'x-request-id': 'scrape-1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('scrape-1');
    expect(await res.text()).toContain('connector_service_shards_owned');
    await expectNotFound(`http://127.0.0.1:${metricsPort}/healthz`);
  });
});

/** 404 `not_found` in the §2 shape, with the caller's X-Request-Id on the answer and in the body. */
async function expectNotFound(url: string): Promise<void> {
  const id = `ops-${Math.random().toString(36).slice(2)}`;
  const res = await fetch(url, { headers: { 'x-request-id': id } });
  expect(res.status).toBe(404);
  expect(res.headers.get('x-request-id')).toBe(id);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: { code: string; message: string; request_id: string } };
  expect(body.error).toMatchObject({ code: 'not_found', request_id: id });
  expect(body.error.message).toEqual(expect.any(String));
}
