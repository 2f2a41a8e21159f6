/**
 * Integration: dead letters an operator and a tenant can act on (INTERFACE §9.1, §9.3).
 * A dead letter is recorded as the ingest consumer records one (the whole message on its
 * subject); the tenant lists and replays its own (another tenant's id is 404), the CLI
 * lists and replays by id, a replayed event is ingested once, and the cluster-wide count
 * reaches /metrics.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeIngestMessage, ingestMsgId } from '../../src/ingest/message.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { installKey, names as makeNames, shardOf } from '../../src/runtime/names.js';
import { recordDeadLetter } from '../../src/store/dead-letters.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { until } from '../support/until.js';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { scrapeSample } from '../support/metrics.js';

let h: CodehostHarness;
type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
let a: Tenant;
let b: Tenant;
let installA: string;
const INST = 6_300_000 + Math.floor(Math.random() * 1000);

beforeAll(async () => {
  h = await startCodehostHarness({ SERVICE_GITHUB_RECONCILE_S: '0' });
  a = await h.tenant('dl-a');
  b = await h.tenant('dl-b');
  installA = await h.install(a, INST);
});
afterAll(async () => {
  await h?.stop();
});

/** What the consumer stores after the last failed delivery of this event. */
async function deadLetter(error = 'relation "graph_nodes" is locked'): Promise<{ id: string; event: IngestEvent }> {
  const event: IngestEvent = {
    installId: installA,
    tenantId: a.tenant_id,
    connectorId: 'codehost',
    id: randomUUID(),
    kind: 'issues.opened',
    occurredAt: null,
    payload: forInstallation(examplePayload('issues', 'opened'), INST),
  };
  const n = makeNames(h.node.namespace);
  const id = await recordDeadLetter(h.node.pool, {
    stream: n.ingestStream,
    streamSeq: 1,
    subject: n.ingestSubject(shardOf(installKey(installA), h.node.config.shards), 'codehost', installA),
    msgId: ingestMsgId(installA, event.id),
    installId: installA,
    deliveries: 8,
    error,
    payload: encodeIngestMessage(event),
  });
  return { id, event };
}

const count = async (id: string) => (await h.eventIds(a, installA)).filter((x) => x === id).length;

describe('dead letters over HTTP', () => {
  it('lists the tenant its own, with the fields of §9.1; others see none and get 404 on replay', async () => {
    const { id, event } = await deadLetter();
    const res = await h.api('/api/v1/dead-letters', a);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { dead_letters: Array<Record<string, unknown>>; next_cursor: string | null };
    expect(body.dead_letters).toContainEqual({
      id,
      tenant_id: a.tenant_id,
      install_id: installA,
      event_id: event.id,
      kind: 'issues.opened',
      error: 'relation "graph_nodes" is locked',
      dead_lettered_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    const other = (await (await h.api('/api/v1/dead-letters', b)).json()) as { dead_letters: unknown[] };
    expect(other.dead_letters).toEqual([]);
    const foreign = await h.api(`/api/v1/dead-letters/${id}/replay`, b, { method: 'POST' });
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(await count(event.id)).toBe(0);
    expect((await h.api('/api/v1/dead-letters?limit=0', a)).status).toBe(400);
    expect((await h.api('/api/v1/dead-letters?install_id=nope', a)).status).toBe(400);
    expect((await fetch(`${h.node.url}/api/v1/dead-letters`)).status).toBe(401);
  });

  it('replays one: ingested once, gone from the list, a second replay is 404', async () => {
    const { id, event } = await deadLetter();
    const res = await h.api(`/api/v1/dead-letters/${id}/replay`, a, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ replayed: 1 });
    await until('the replayed event stored', async () => (await count(event.id)) === 1, { timeoutMs: 30_000 });
    const again = await h.api(`/api/v1/dead-letters/${id}/replay`, a, { method: 'POST' });
    expect(again.status).toBe(404);
    const list = (await (await h.api(`/api/v1/dead-letters?install_id=${installA}`, a)).json()) as {
      dead_letters: Array<{ id: string }>;
    };
    expect(list.dead_letters.map((d) => d.id)).not.toContain(id);
    expect(await count(event.id)).toBe(1);
  });

  it('counts the dead letters of the whole cluster in /metrics', async () => {
    await deadLetter();
    const { rows } = await h.node.pool.query<{ n: string }>('SELECT count(*) AS n FROM dead_letters');
    // Other test files share the database and may add some between the two reads.
    expect(await scrapeSample(h.node.url, 'connector_service_dead_letters', {})).toBeGreaterThanOrEqual(
      Number(rows[0]!.n),
    );
    expect(Number(rows[0]!.n)).toBeGreaterThanOrEqual(1);
  });
});

describe('connectors dead-letters', () => {
  const env = () => ({
    DATABASE_URL: testDatabaseUrl(),
    NATS_URL: testNatsUrl(),
    SERVICE_NAMESPACE: h.node.namespace,
    // Replays are sealed with the deployment's master key (INTERFACE §9.4).
    SERVICE_MASTER_KEY: TEST_MASTER_KEY,
  });

  it('lists as JSON lines and replays by id; the event is ingested once', async () => {
    const { id, event } = await deadLetter('boom');
    const listed = await runCli(['dead-letters', 'list', '--install', installA], env());
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; event_id: string; error: string; tenant_id: string });
    expect(lines.find((l) => l.id === id)).toMatchObject({ event_id: event.id, error: 'boom', tenant_id: a.tenant_id });

    const none = await runCli(['dead-letters', 'list', '--tenant', b.tenant_id], env());
    expect(none).toMatchObject({ code: 0, stdout: '' });

    const replayed = await runCli(['dead-letters', 'replay', '--id', id], env());
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout)).toEqual({ replayed: 1 });
    await until('the replayed event stored', async () => (await count(event.id)) === 1, { timeoutMs: 30_000 });

    const twice = await runCli(['dead-letters', 'replay', '--id', id], env());
    expect(JSON.parse(twice.stdout)).toEqual({ replayed: 0 });

    // INTERFACE §10.5: audited in the tenant's log as the route's replay is; no key, the run its request.
    const audit = (await (await h.api('/api/v1/audit?limit=100', a)).json()) as {
      entries: Array<{ action: string; key_id: string | null; request_id: string; target: string; outcome: string }>;
    };
    const mine = audit.entries.filter((e) => e.target === `dead-letter/${id}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ action: 'dead_letter_replay', key_id: null, outcome: 'ok' });
    expect(mine[0]!.request_id).toMatch(/^cli-[0-9a-f-]{36}$/);
    const other = (await (await h.api('/api/v1/audit?limit=100', b)).json()) as { entries: Array<{ target: string }> };
    expect(other.entries.filter((e) => e.target === `dead-letter/${id}`)).toEqual([]);
  });

  it('replays every dead letter of an install with --install', async () => {
    const one = await deadLetter();
    const two = await deadLetter();
    const r = await runCli(['dead-letters', 'replay', '--install', installA], env());
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { replayed: number }).replayed).toBeGreaterThanOrEqual(2);
    await until('both stored', async () => (await count(one.event.id)) === 1 && (await count(two.event.id)) === 1, {
      timeoutMs: 30_000,
    });
    // One entry per dead letter replayed, all of the one run.
    const audit = (await (await h.api('/api/v1/audit?limit=100', a)).json()) as {
      entries: Array<{ request_id: string; target: string }>;
    };
    const runs = audit.entries.filter((e) => [one.id, two.id].some((id) => e.target === `dead-letter/${id}`));
    expect(runs).toHaveLength(2);
    expect(new Set(runs.map((e) => e.request_id)).size).toBe(1);
  });

  it.each([
    [['dead-letters', 'replay'], 'exactly one of'],
    [['dead-letters', 'replay', '--id', '1', '--all'], 'exactly one of'],
    [['dead-letters', 'replay', '--id', 'x'], '--id'],
    [['dead-letters', 'list', '--tenant', 'nope'], '--tenant'],
    [['dead-letters', 'purge'], 'dead-letters'],
  ])('refuses %j with exit 2 naming %s', async (args, naming) => {
    const r = await runCli(args, env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(naming);
  });
});
