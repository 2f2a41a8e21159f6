/**
 * `GET /api/v1/export` (INTERFACE §10.5): a tenant's graph as NDJSON, every node then every
 * edge, in the node route's shapes; never another tenant's; audited; streamed from a cursor,
 * so a slow reader keeps what the node holds flat (the export's own held-bytes gauge, not RSS)
 * and a reader that goes away gives its connection back.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageEvent, nextTs, type FakeChannel, type FakeTeam } from 'connector-service/testing';
import { GraphEdge, GraphNode } from '../../src/edge/schemas.js';
import { createApiKey } from '../../src/store/api-keys.js';
import { TEST_MASTER_KEY } from '../support/env.js';
import { scrapeSample } from '../support/metrics.js';
import { allEvents, installOk, json, startChatStack, type ChatStack, type Tenant } from '../support/slack-harness.js';
import { until } from '../support/until.js';

let s: ChatStack;
let tenant: Tenant;
let other: Tenant;
let installId: string;
let otherInstall: string;
let mine: string[];
let theirs: string;
const word = () => `exp${randomBytes(5).toString('hex')}x`;

async function post(t: Tenant, install: string, team: FakeTeam, ch: FakeChannel, text: string): Promise<void> {
  const m = { ts: nextTs(), user: 'U0EXPORT', text };
  expect((await s.slack.deliver(team.id, messageEvent(team, ch, m))).status).toBe(200);
  await until(
    'the message event stored',
    async () => (await allEvents(s.node.url, t, install)).some((e) => e.id === `message:${ch.id}:${m.ts}`),
    { timeoutMs: 10_000 },
  );
}

interface Line {
  type: string;
  node?: { id: string; kind: string; install_id: string; props: Record<string, unknown> };
  edge?: { from: string; to: string };
}
const exportLines = async (t: Tenant, query = '', requestId = 'export-req') => {
  const res = await fetch(`${s.node.url}/api/v1/export${query}`, { headers: { ...t.auth, 'x-request-id': requestId } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
  const text = await res.text();
  expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
};

/** Node rows straight into the database: `count` message nodes of `bytes` of text each. */
const bulkNodes = (count: number, bytes: number) =>
  s.node.pool.query(
    `INSERT INTO graph_nodes (tenant_id, kind, external_id, connector_id, install_id, props)
     SELECT $1, 'message', 'bulk:' || g || ':' || $4, 'chatapp', $2, jsonb_build_object('text', repeat('b', $3))
     FROM generate_series(1, $5) g`,
    [tenant.tenant_id, installId, bytes, word(), count],
  );

beforeAll(async () => {
  s = await startChatStack();
  const team = s.slack.addTeam();
  const otherTeam = s.slack.addTeam();
  tenant = await s.node.tenant('exporting');
  other = await s.node.tenant('other');
  installId = (await installOk(s, tenant, team.id)).install_id;
  otherInstall = (await installOk(s, other, otherTeam.id)).install_id;
  const ch = s.slack.addChannel(team.id, { type: 'channel' });
  const otherCh = s.slack.addChannel(otherTeam.id, { type: 'channel' });
  mine = [word(), word()];
  theirs = word();
  for (const w of mine) await post(tenant, installId, team, ch, `said ${w}`);
  await post(other, otherInstall, otherTeam, otherCh, `said ${theirs}`);
});
afterAll(() => s?.stop());

describe('GET /api/v1/export', () => {
  it("streams every node then every edge of the tenant, in the node route's shapes, and nothing of another", async () => {
    const lines = await exportLines(tenant);
    const firstEdge = lines.findIndex((l) => l.type === 'edge');
    expect(firstEdge).toBeGreaterThan(0);
    expect(lines.slice(firstEdge).every((l) => l.type === 'edge')).toBe(true);
    const nodes = lines.filter((l) => l.type === 'node').map((l) => GraphNode.parse(l.node));
    const edges = lines.filter((l) => l.type === 'edge').map((l) => GraphEdge.parse(l.edge));
    expect(new Set(nodes.map((n) => n.kind))).toEqual(new Set(['chat.channel', 'chat.user', 'chat.message']));
    const ids = new Set(nodes.map((n) => n.id));
    expect(edges.every((e) => ids.has(e.from) && ids.has(e.to))).toBe(true);
    expect(nodes.every((n) => n.install_id === installId)).toBe(true);
    const texts = JSON.stringify(lines);
    for (const w of mine) expect(texts).toContain(w);
    expect(texts).not.toContain(theirs);
    expect(texts).not.toContain(otherInstall);
    // One node reads as its own route answers it, edges aside.
    const message = nodes.find((n) => JSON.stringify(n.props).includes(mine[0]!))!;
    const one = await json(await fetch(`${s.node.url}/api/v1/graph/nodes/${message.id}`, { headers: tenant.auth }));
    const { edges: _edges, edges_truncated: _t, ...alone } = one;
    expect(message).toEqual(alone);

    expect(await exportLines(tenant, `?install_id=${installId}`)).toEqual(lines);
    const theirLines = await exportLines(other);
    expect(JSON.stringify(theirLines)).toContain(theirs);
    expect(JSON.stringify(theirLines)).not.toContain(installId);

    const audit = await json(await fetch(`${s.node.url}/api/v1/audit`, { headers: tenant.auth }));
    expect(audit.entries.find((e: { request_id: string }) => e.request_id === 'export-req')).toMatchObject({
      action: 'export',
      outcome: 'ok',
    });
  });

  it('answers §2 errors: bad query 400, a foreign install 404, a key without graph:read 403', async () => {
    const get = async (query: string, auth = tenant.auth) => {
      const res = await fetch(`${s.node.url}/api/v1/export${query}`, { headers: auth });
      return { status: res.status, code: (await json(res)).error?.code as string };
    };
    expect(await get('?install_id=')).toEqual({ status: 400, code: 'bad_request' });
    expect(await get('?since=1')).toEqual({ status: 400, code: 'bad_request' });
    expect(await get(`?install_id=${otherInstall}`)).toEqual({ status: 404, code: 'not_found' });
    const { api_key } = await createApiKey(s.node.pool, TEST_MASTER_KEY, tenant.tenant_id, {
      scopes: ['installs:read', 'audit:read'],
    });
    expect(await get('', { authorization: `Bearer ${api_key}` })).toEqual({ status: 403, code: 'forbidden' });
  });

  it('holds a few hundred KiB, not the tenant, for a slow reader of a 24 MB export', async () => {
    await bulkNodes(3_000, 8_000);
    const held: number[] = [];
    let read = 0;
    const res = await openRaw();
    const sample = async () => held.push(await scrapeSample(s.node.url, 'connector_service_export_held_bytes', {}));
    // The reader takes 16 KiB at a time and looks at the node's gauge every 512 KiB.
    for (let next = 0; ;) {
      const chunk = await readSome(res, 16 * 1024);
      if (chunk === null) break;
      read += chunk.length;
      if (read >= next) {
        await sample();
        next += 512 * 1024;
      }
    }
    expect(read).toBeGreaterThan(20 * 1024 * 1024);
    expect(held.length).toBeGreaterThan(40);
    // Bounded by a couple of batches (256 KiB each) and the stream buffers, whatever the tenant's size.
    expect(Math.max(...held)).toBeLessThan(2 * 1024 * 1024);
    expect(Math.max(...held)).toBeGreaterThan(0);
  });

  it('gives the connection back when the reader goes away mid-stream', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await openRaw();
      expect(await readSome(res, 1024)).not.toBeNull();
      expect(await scrapeSample(s.node.url, 'connector_service_exports_open', {})).toBe(1);
      res.destroy();
      await until(
        'export closed',
        async () => (await scrapeSample(s.node.url, 'connector_service_exports_open', {})) === 0,
        { timeoutMs: 10_000 },
      );
      await until('no transaction left open', async () => (await openTransactions()) === 0, { timeoutMs: 10_000 });
    }
    // Three readers gone, each export's slot and connection back: a fourth reads to the end.
    expect((await exportLines(tenant)).length).toBeGreaterThan(3_000);
  });
});

/** Connections of this database still inside an export's transaction (its cursors named export_*). */
async function openTransactions(): Promise<number> {
  const { rows } = await s.node.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity
     WHERE datname = current_database() AND xact_start IS NOT NULL AND query ~ 'export_(nodes|edges)'
       AND pid <> pg_backend_pid()`,
  );
  return Number(rows[0]!.n);
}

/** An export's response, not yet read (node:http, so the test reads it at its own pace). */
function openRaw(): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${s.node.url}/api/v1/export`, { headers: tenant.auth }, (res) => {
      expect(res.statusCode).toBe(200);
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Up to `max` bytes, once some are there; null at the end. */
function readSome(res: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const chunk = res.read(Math.min(max, res.readableLength || max)) as Buffer | null;
      if (chunk !== null) return done(chunk);
      if (res.readableEnded) return done(null);
    };
    const done = (v: Buffer | null) => {
      res.off('readable', attempt);
      res.off('end', onEnd);
      res.off('error', reject);
      resolve(v);
    };
    const onEnd = () => done(null);
    res.on('readable', attempt);
    res.on('end', onEnd);
    res.on('error', reject);
    attempt();
  });
}
