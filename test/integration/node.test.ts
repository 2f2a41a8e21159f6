import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestNode, type TestNode } from '../support/node.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
});
afterAll(() => t?.stop());

describe('serve against the machine Postgres and NATS', () => {
  it('passes /readyz once it owns the shards, and serves tenant routes', async () => {
    const ready = await fetch(`${t.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, checks: { nats: true, postgres: true, shards: true } });
    const tenant = await t.tenant();
    const res = await fetch(`${t.url}/api/v1/connectors/installs`, { headers: tenant.auth });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ installs: [] });
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_service_shards_owned 4$/m);
  });
});
