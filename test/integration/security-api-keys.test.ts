/**
 * API-key lifecycle (INTERFACE §9.1) on a two-node cluster: `tenants create` prints the
 * key id, `api-keys create` adds a working key, `api-keys revoke` makes every node answer
 * 401 to that key within 5 s while the tenant's other key keeps working. Also
 * SERVICE_METRICS_PORT on a real node (INTERFACE §9.2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/free-port.js';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl } from '../support/env.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

const env = () => ({ DATABASE_URL: testDatabaseUrl(), SERVICE_MASTER_KEY: TEST_MASTER_KEY });
const cli = async (args: string[]) => {
  const r = await runCli(args, env());
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim()) as Record<string, string>;
};

let nodes: TestNode[] = [];
let metricsPort = 0;
beforeAll(async () => {
  const namespace = freshNamespace('keys');
  metricsPort = await freePort();
  nodes = [
    await startTestNode({ SERVICE_NAMESPACE: namespace, SERVICE_METRICS_PORT: String(metricsPort) }),
    await startTestNode({ SERVICE_NAMESPACE: namespace }, ['edge']),
  ];
});
afterAll(async () => {
  for (const n of nodes.reverse()) await n.stop();
});

const status = async (node: TestNode, key: string) =>
  (await fetch(`${node.url}/api/v1/connectors`, { headers: { authorization: `Bearer ${key}` } })).status;

describe('API keys on a two-node cluster', () => {
  it('creates, uses and revokes keys; every node refuses a revoked key within 5 s', async () => {
    const tenant = await cli(['tenants', 'create', '--name', 'keyring']);
    expect(tenant.key_id).toMatch(/^[0-9a-f-]{36}$/);
    const second = await cli(['api-keys', 'create', '--tenant', tenant.tenant_id!]);
    expect(Object.keys(second).sort()).toEqual(['api_key', 'key_id']);
    expect(second.key_id).not.toBe(tenant.key_id);
    expect(second.api_key).not.toBe(tenant.api_key);

    // Both keys work on both nodes, which now hold them in their caches.
    for (const n of nodes) {
      expect(await status(n, tenant.api_key!)).toBe(200);
      expect(await status(n, second.api_key!)).toBe(200);
    }

    // Another tenant cannot revoke it, and an unknown key id is refused plainly.
    const other = await cli(['tenants', 'create', '--name', 'intruder']);
    const foreign = await runCli(
      ['api-keys', 'revoke', '--tenant', other.tenant_id!, '--key-id', second.key_id!],
      env(),
    );
    expect(foreign.code).not.toBe(0);
    expect(foreign.stderr).toContain('not found');
    expect(await status(nodes[1]!, second.api_key!)).toBe(200);

    const revoked = await cli(['api-keys', 'revoke', '--tenant', tenant.tenant_id!, '--key-id', second.key_id!]);
    expect(revoked).toEqual({ key_id: second.key_id, revoked: true });
    const revokedAt = Date.now();
    const refusedAfter: number[] = [];
    for (const [i, n] of nodes.entries()) {
      // Both nodes refuse it within 5 s of the revoke, counted from the revoke for each.
      await until(
        `node ${i} refusing the revoked key within 5 s of the revoke`,
        async () => (await status(n, second.api_key!)) === 401,
        { timeoutMs: Math.max(0, revokedAt + 5_000 - Date.now()), everyMs: 100 },
      );
      refusedAfter.push(Date.now() - revokedAt);
    }
    // The tenant's first key is untouched, and revoking twice answers the same.
    for (const n of nodes) expect(await status(n, tenant.api_key!)).toBe(200);
    expect(await cli(['api-keys', 'revoke', '--tenant', tenant.tenant_id!, '--key-id', second.key_id!])).toEqual(
      revoked,
    );
    console.info(`revoked key refused by both nodes after ${refusedAfter.join(' / ')} ms`);
  }, 180_000);

  it('refuses bad arguments with exit 2, a first stderr line naming the problem, then the usage', async () => {
    for (const [args, names] of [
      [['api-keys', 'create'], /--tenant/],
      [['api-keys', 'create', '--tenant', 'nope'], /--tenant/],
      [['api-keys', 'revoke', '--tenant', '00000000-0000-4000-8000-000000000000'], /--key-id/],
      [['api-keys', 'rename', '--tenant', '00000000-0000-4000-8000-000000000000'], /rename|api-keys/],
      [['keys', 'spin'], /spin|keys/],
    ] as Array<[string[], RegExp]>) {
      const r = await runCli(args, env());
      expect(r.code, args.join(' ')).toBe(2);
      // INTERFACE §9.1: usage on stderr; its first line says what was wrong.
      expect(r.stderr.split('\n')[0], args.join(' ')).toMatch(names);
      expect(r.stderr).toContain('usage');
    }
  }, 180_000);
});

describe('SERVICE_METRICS_PORT', () => {
  it('serves /metrics on its own port only', async () => {
    expect((await fetch(`${nodes[0]!.url}/metrics`)).status).toBe(404);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('http_requests_total');
    // The edge-only node without the setting keeps /metrics on its public port.
    expect((await fetch(`${nodes[1]!.url}/metrics`)).status).toBe(200);
  });
});
