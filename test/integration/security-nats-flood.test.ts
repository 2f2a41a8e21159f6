/**
 * The NATS fence under a flood (issue 32 item 2): a client of the deployment's NATS account,
 * in a process of its own, publishes unsealed and mis-sealed garbage onto every shard's
 * ingest subjects as fast as the server takes it for 10 s, while GitHub keeps sending signed
 * webhooks. The webhooks all answer 2xx and are stored; every forged message the stream took
 * is refused exactly once (counted once, never redelivered) and leaves the stream; the log
 * names a few subjects rather than every message.
 *
 * Its own nats-server (its own port and store), so the flood never touches the machine's
 * shared server; the stream at its default size (1 GiB). A fence that keeps what it refuses
 * (a `+TERM <reason>`, which nats-server 2.9 ignores) holds the consumers' ack-pending places
 * with forged messages for ever: no webhook event behind them is stored, and the stream only
 * grows.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { names as makeNames } from '../../src/runtime/names.js';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { scrapeSample } from '../support/metrics.js';
import { startNatsChild, type NatsChild } from '../support/nats-restart-server.js';
import { until } from '../support/until.js';

const FLOOD_S = 10;
const INSTALLATION = 5_300_000 + Math.floor(Math.random() * 1000);
let nats: NatsChild;
let h: CodehostHarness;
let nc: NatsConnection;
const logs = new LogCapture();

beforeAll(async () => {
  nats = await startNatsChild();
  h = await startCodehostHarness({ NATS_URL: nats.url }, { logs });
  nc = await connect({ servers: nats.url });
}, 60_000);
afterAll(async () => {
  await nc?.close();
  await h?.stop();
  await nats?.dispose();
});

interface FloodReport {
  sent: number;
  stored: number;
  refused: number;
  unanswered: number;
}

function flood(prefix: string, shards: number): Promise<FloodReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/support/nats-flood-child.ts', nats.url, prefix, String(shards), String(FLOOD_S)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.once('close', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim()) as FloodReport) : reject(new Error(`flood exited ${code}: ${err}`)),
    );
  });
}

describe('NATS fence under a flood of forged ingest messages', () => {
  it('keeps answering signed webhooks 2xx and sheds every forged message once', async () => {
    const names = makeNames(h.node.namespace);
    const shards = h.node.config.shards;
    const jsm = await jetstreamManager(nc);
    const t = await h.tenant('flooded');
    const installId = await h.install(t, INSTALLATION);
    const refusedBefore = await scrapeSample(h.node.url, 'connector_service_nats_refused_total', { path: 'ingest' });

    const attack = flood(`${names.ns}.ingest`, shards);
    let attackDone = false;
    void attack.finally(() => (attackDone = true)).catch(() => undefined);
    // The stream's backlog through the flood, for the figures (docs/security.md).
    let peakBacklog = 0;
    const watching = (async () => {
      while (!attackDone) {
        peakBacklog = Math.max(peakBacklog, (await jsm.streams.info(names.ingestStream)).state.messages);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    // Signed webhooks all through the flood, one after another, as GitHub sends them.
    const deliveries: Array<{ id: string; status: number; ms: number }> = [];
    while (!attackDone) {
      const id = randomUUID();
      const t0 = Date.now();
      const payload = forInstallation(examplePayload('pull_request', 'closed'), INSTALLATION);
      const res = await h.deliver('pull_request', payload, { delivery: id });
      deliveries.push({ id, status: res.status, ms: Date.now() - t0 });
      await new Promise((r) => setTimeout(r, 100));
    }
    const report = await attack;
    await watching;
    const floodEnded = Date.now();

    // The flood was real, and the stream took all of it: it never filled.
    expect(report.unanswered).toBe(0);
    expect(report.sent).toBeGreaterThan(20_000);
    expect(report.refused).toBe(0);
    expect(deliveries.length).toBeGreaterThan(10);
    // Every webhook answered 2xx: the stream never filled.
    expect(deliveries.filter((d) => d.status !== 202)).toEqual([]);

    // Each webhook's event is stored.
    const ids = new Set(deliveries.map((d) => d.id));
    await until(
      'every webhook event stored',
      async () => {
        const res = await h.api(`/api/v1/connectors/installs/${installId}/events?limit=500`, t);
        // A loaded machine may answer 503 (the 2 s wait budget): ask again.
        if (res.status !== 200) return false;
        const { events } = (await res.json()) as { events: Array<{ id: string }> };
        return events.filter((e) => ids.has(e.id)).length === ids.size;
      },
      { timeoutMs: 60_000, everyMs: 250 },
    );

    // Every forged message the stream took was refused once, and none is left in the stream.
    await until(
      'every forged message refused',
      async () =>
        (await scrapeSample(h.node.url, 'connector_service_nats_refused_total', { path: 'ingest' })) - refusedBefore >=
        report.stored,
      { timeoutMs: 60_000, everyMs: 250 },
    );
    await until('the stream emptied', async () => (await jsm.streams.info(names.ingestStream)).state.messages === 0, {
      timeoutMs: 30_000,
      everyMs: 250,
    });
    const drained = Date.now();
    const refused =
      (await scrapeSample(h.node.url, 'connector_service_nats_refused_total', { path: 'ingest' })) - refusedBefore;
    expect(refused).toBe(report.stored);
    for (let shard = 0; shard < shards; shard++) {
      const c = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard));
      expect({ shard, pending: c.num_pending, ackPending: c.num_ack_pending, redelivered: c.num_redelivered }).toEqual({
        shard,
        pending: 0,
        ackPending: 0,
        redelivered: 0,
      });
    }
    // A few lines name subjects; the rest is told in summaries, not one line per message.
    const lines = logs.find('without a valid seal refused', LOG_LEVEL.warn);
    expect(lines.length).toBeLessThanOrEqual(10);
    console.info(
      `flood: ${report.sent} forged messages in ${FLOOD_S} s, all stored and refused once; backlog peaked at ` +
        `${peakBacklog} and was gone ${((drained - floodEnded) / 1000).toFixed(1)} s after the flood; ` +
        `${deliveries.length} webhooks all 202, slowest ${Math.max(...deliveries.map((d) => d.ms))} ms`,
    );
  }, 180_000);
});
