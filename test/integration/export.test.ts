/**
 * `GET /api/v1/export` (INTERFACE §10.5): the tenant's nodes then edges as NDJSON, in the
 * shapes of the node route, only the caller's (and with `install_id`, one install's); and a
 * tenant of 200 000 nodes streams out with the node's RSS growing by less than 50 MiB (the
 * node runs in this process; the reader counts lines as they come and keeps none).
 */
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstall, type Install } from '../../src/store/installs.js';
import { startTestNode, type TestNode } from '../support/node.js';

/** A full collection on demand: the flag, then `gc` from a fresh context (where V8 installs it). */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let node: TestNode;
type Tenant = Awaited<ReturnType<TestNode['tenant']>>;
let a: Tenant;
let b: Tenant;
let installA: Install;
let installA2: Install;

beforeAll(async () => {
  node = await startTestNode();
  a = await node.tenant('exporting');
  b = await node.tenant('other');
  installA = await createInstall(node.pool, { tenantId: a.tenant_id, connectorId: 'chatapp', externalId: 'TEXP1' });
  installA2 = await createInstall(node.pool, { tenantId: a.tenant_id, connectorId: 'chatapp', externalId: 'TEXP2' });
});
afterAll(() => node?.stop());

/** `n` message nodes of the install, each `reply_to` the first. */
async function seed(install: Install, n: number, text: string): Promise<void> {
  await node.pool.query(
    `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id, props)
     SELECT $1, 'chat.message', $2 || ':C1:' || g, 'chatapp', $3,
            jsonb_build_object('text', $4 || ' ' || g, 'user', 'U1', 'channel_type', 'channel')
       FROM generate_series(1, $5::int) g`,
    [install.tenant_id, install.external_id, install.install_id, text, n],
  );
  await node.pool.query(
    `INSERT INTO graph_edges (tenant_id, type, from_node, to_node)
     SELECT n.tenant_id, 'reply_to', n.node_id, f.node_id
       FROM graph_nodes n, (SELECT node_id FROM graph_nodes WHERE install_id = $1 ORDER BY seq LIMIT 1) f
      WHERE n.install_id = $1 AND n.node_id <> f.node_id AND n.seq % 100 = 0`,
    [install.install_id],
  );
}

async function exportOf(t: Tenant, query = '') {
  const res = await fetch(`${node.url}/api/v1/export${query}`, { headers: t.auth });
  return {
    res,
    lines: res.ok
      ? (await res.text())
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [],
  };
}

describe('GET /api/v1/export', () => {
  it("answers the tenant's nodes, then its edges, as NDJSON; one install's with install_id", async () => {
    await seed(installA, 250, 'alpha');
    await seed(installA2, 30, 'beta');
    const { res, lines } = await exportOf(a);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const types = lines.map((l) => l.type as string);
    expect(types.filter((t) => t === 'node')).toHaveLength(280);
    expect(types.indexOf('edge')).toBe(280); // every node first
    expect(lines[0].node).toMatchObject({
      kind: 'chat.message',
      connector_id: 'chatapp',
      install_id: installA.install_id,
      source_status: 'active',
      props: { text: 'alpha 1' },
    });
    expect(Object.keys(lines[0].node).sort()).toEqual([
      'connector_id',
      'created_at',
      'external_id',
      'id',
      'install_id',
      'kind',
      'props',
      'source_status',
      'updated_at',
    ]);
    const edge = lines.find((l) => l.type === 'edge').edge;
    expect(Object.keys(edge).sort()).toEqual(['from', 'props', 'to', 'type']);
    const ids = new Set(lines.filter((l) => l.type === 'node').map((l) => l.node.id));
    for (const l of lines.filter((x) => x.type === 'edge'))
      expect(ids.has(l.edge.from) && ids.has(l.edge.to)).toBe(true);

    const one = await exportOf(a, `?install_id=${installA2.install_id}`);
    expect(one.lines.filter((l) => l.type === 'node').map((l) => l.node.props.text)).toEqual(
      Array.from({ length: 30 }, (_, i) => `beta ${i + 1}`),
    );
    expect((await exportOf(b)).lines).toEqual([]);
    expect((await exportOf(b, `?install_id=${installA.install_id}`)).res.status).toBe(404);
    // Not an install of the caller's, as for the graph listing's filter.
    expect((await exportOf(a, '?install_id=nope')).res.status).toBe(404);
    expect((await fetch(`${node.url}/api/v1/export`)).status).toBe(401);
  });

  it('streams 200 000 nodes with the RSS growing by less than 50 MiB', async () => {
    const big = await node.tenant('big');
    const inst = await createInstall(node.pool, {
      tenantId: big.tenant_id,
      connectorId: 'chatapp',
      externalId: `T${randomUUID()}`,
    });
    // ~300 bytes of props each: about 90 MB of NDJSON in all.
    await seed(inst, 200_000, 'x'.repeat(240));
    // Garbage is collected as the export goes (a collection every 10 000 lines), so what the RSS
    // shows is what is held: a node that buffered the export would hold all of it.
    gc();
    const before = process.memoryUsage().rss;
    let peak = before;
    let count = 0;
    const res = await fetch(`${node.url}/api/v1/export`, { headers: big.auth });
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    let rest = '';
    for await (const chunk of res.body!) {
      const text = rest + decoder.decode(chunk as Uint8Array, { stream: true });
      const cut = text.lastIndexOf('\n');
      const was = count;
      count += text.slice(0, cut + 1).split('\n').length - 1;
      rest = text.slice(cut + 1);
      if (Math.floor(count / 10_000) > Math.floor(was / 10_000)) {
        gc();
        peak = Math.max(peak, process.memoryUsage().rss);
      }
    }
    const { rows } = await node.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM graph_edges WHERE tenant_id = $1',
      [big.tenant_id],
    );
    expect(count).toBe(200_000 + Number(rows[0]!.n));
    expect(peak - before).toBeLessThan(50 * 1024 * 1024);
  }, 180_000);
});
