/**
 * The node-wide bound on ingest events held (ingest/buffer.ts, pull.ts),
 * against real JetStream: shards that share a buffer hold no more than it together, in
 * events and in bytes; a full node still takes the redelivery its lanes wait for; and a
 * batch stops at its byte cap.
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, deferred, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { IngestBuffer } from '../../src/ingest/buffer.js';
import { ShardIngestConsumer } from '../../src/ingest/consumer.js';
import { PULL_LEAST, PULL_MIN } from '../../src/ingest/pull.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { installKey, names as makeNames, shardOf, type Names } from '../../src/runtime/names.js';
import type { BlobPort, IngestEvent } from '../../src/runtime/ports.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { memoryBlobs, memoryDeadLetters } from '../support/ingest-ports.js';
import { until } from '../support/until.js';

const log = createLogger({ level: 'silent', node: 'test' });
const SHARDS = 4;

/** `pad` characters of text make the event about that many bytes larger. */
function event(installId: string, n: number, pad = 0): IngestEvent {
  const id = `e${n}`;
  const payload = pad > 0 ? { n, text: 'x'.repeat(pad) } : { n };
  return { installId, tenantId: 't1', connectorId: 'chatapp', id, kind: 'message', occurredAt: null, payload };
}

/** An install id whose events land on `shard`. */
function installOn(shard: number): string {
  for (let i = 0; ; i++) if (shardOf(installKey(`buf${shard}-${i}`), SHARDS) === shard) return `buf${shard}-${i}`;
}

describe('integration: a node holds no more ingest events than its buffer', () => {
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let names: Names;
  const running: ShardIngestConsumer[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
    await jsm.streams.delete(names.ingestStream).catch(() => undefined);
    await jsm.streams.delete(names.ingestMaxedStream).catch(() => undefined);
  });

  afterAll(async () => {
    await nc.drain();
  });

  /** `opts.blobs`: where events over `opts.maxPayload` (default: the server's) go. */
  async function backlog(
    perInstall: number,
    installs: string[],
    opts: { pad?: number; blobs?: BlobPort; maxPayload?: number } = {},
  ): Promise<void> {
    names = makeNames(freshNamespace('inbuf'));
    await ensureIngestStream(jsm, names);
    const publisher = new IngestPublisher({
      js,
      names,
      shards: SHARDS,
      blobs: opts.blobs ?? memoryBlobs(),
      maxPayload: opts.maxPayload ?? nc.info!.max_payload,
    });
    for (let n = 0; n < perInstall; n++) {
      await Promise.all(installs.map((i) => publisher.publish(event(i, n, opts.pad))));
    }
  }

  function start(
    shard: number,
    buffer: IngestBuffer,
    deliver: (events: IngestEvent[]) => Promise<void>,
    extra: { nakBaseMs?: number; ackWaitMs?: number; maxBatchBytes?: number; blobs?: BlobPort } = {},
  ): Promise<void> {
    const c = new ShardIngestConsumer({
      js,
      jsm,
      names,
      shard,
      log,
      blobs: extra.blobs ?? memoryBlobs(),
      deadLetters: memoryDeadLetters(),
      deliver,
      buffer,
      ...extra,
    });
    running.push(c);
    return c.start();
  }

  /**
   * One consumer per shard, all sharing `buffer`, until each install committed `perInstall`
   * events; returns the ids committed per install and the peak of `measure(buffer)`.
   */
  async function drainShards(
    installs: string[],
    perInstall: number,
    buffer: IngestBuffer,
    measure: (b: IngestBuffer) => number,
  ): Promise<{ committed: Map<string, number[]>; peak: number }> {
    const committed = new Map<string, number[]>(installs.map((i) => [i, []]));
    let peak = 0;
    const sample = setInterval(() => (peak = Math.max(peak, measure(buffer))), 2);
    try {
      const deliver = async (events: IngestEvent[]) => {
        peak = Math.max(peak, measure(buffer));
        await new Promise((r) => setTimeout(r, 5));
        for (const ev of events) committed.get(ev.installId)!.push((ev.payload as { n: number }).n);
      };
      await Promise.all(installs.map((_, s) => start(s, buffer, deliver)));
      await until('every event committed', () => [...committed.values()].every((c) => c.length === perInstall), {
        timeoutMs: 30_000,
      });
    } finally {
      clearInterval(sample);
    }
    return { committed, peak };
  }

  it('four backlogged shards sharing a buffer of 100 never hold more than 100 events, and commit every one in order', async () => {
    const installs = Array.from({ length: SHARDS }, (_, s) => installOn(s));
    await backlog(300, installs);
    const buffer = new IngestBuffer(100);
    const { committed, peak } = await drainShards(installs, 300, buffer, (b) => b.size());
    for (const ids of committed.values()) expect(ids).toEqual(Array.from({ length: 300 }, (_, n) => n));
    // Each shard alone may hold 1 024 (the server's bound): only the shared buffer keeps them at 100.
    expect(peak).toBeLessThanOrEqual(100);
    expect(peak).toBeGreaterThan(50);
    await until('nothing held', () => buffer.size() === 0, { timeoutMs: 5_000 });
  });

  it('a full node still takes the redelivery its lanes wait for: a failed head event commits first, then the rest', async () => {
    const install = installOn(0);
    await backlog(200, [install]);
    const buffer = new IngestBuffer(64);
    const committed: number[] = [];
    let failures = 0;
    let peak = 0;
    const sample = setInterval(() => (peak = Math.max(peak, buffer.size())), 2);
    await start(
      0,
      buffer,
      async (events) => {
        // The first event fails in its batch and alone, after the buffer has filled behind it;
        // then it is nak'd, and its redelivery is what the held events wait for.
        if (failures < 2 && events.some((e) => e.id === 'e0')) {
          // Full for this shard: it holds events, so it waits for PULL_LEAST places.
          if (failures === 0) await until('the buffer is full', () => buffer.free() < PULL_LEAST, { timeoutMs: 5_000 });
          failures++;
          throw new Error('could not commit');
        }
        for (const ev of events) committed.push((ev.payload as { n: number }).n);
      },
      { nakBaseMs: 300 },
    );
    // The held events wait behind e0 until its redelivery: without asking for it while full,
    // they would wait until the lane gives up on it (twice the 10 s ack wait) and lose the order.
    await until('every event committed', () => committed.length === 200, { timeoutMs: 15_000 }).finally(() =>
      clearInterval(sample),
    );
    expect(failures).toBe(2);
    expect(committed).toEqual(Array.from({ length: 200 }, (_, n) => n));
    // Asking for the redelivery may bring a new event instead, a few at most (each ask waits longer).
    expect(peak).toBeLessThanOrEqual(64 + 3);
  });

  it('a delivery the shard never saw (its delivery sequence jumped) makes the later events of its install wait for it', async () => {
    const install = installOn(0);
    await backlog(100, [install]);
    const buffer = new IngestBuffer(64);
    const committed: number[] = [];
    const gate = deferred<void>();
    await start(
      0,
      buffer,
      async (events) => {
        await gate;
        for (const ev of events) committed.push((ev.payload as { n: number }).n);
      },
      { ackWaitMs: 2_000 },
    );
    // Full and paused (no pull request open): another client takes the next delivery and
    // drops it, as a pull request that ended while the server still sent to it would.
    await until('the shard is full', () => buffer.free() < PULL_LEAST / 4, { timeoutMs: 5_000 });
    await until(
      'no pull request of the shard open',
      async () => (await jsm.consumers.info(names.ingestStream, names.ingestConsumer(0))).num_waiting === 0,
      { timeoutMs: 15_000 },
    );
    const consumer = await js.consumers.get(names.ingestStream, names.ingestConsumer(0));
    const stolen = await consumer.next({ expires: 5_000 });
    expect(stolen).not.toBeNull();
    gate.resolve();
    await until('every event committed', () => committed.length === 100, { timeoutMs: 15_000 });
    expect(committed).toEqual(Array.from({ length: 100 }, (_, n) => n));
  });

  it('four backlogged shards of 20 KB events never hold more bytes than the buffer (2 MiB), and commit every one in order', async () => {
    const installs = Array.from({ length: SHARDS }, (_, s) => installOn(s));
    const pad = 20_000;
    await backlog(150, installs, { pad });
    // The count alone would let each shard hold the server's 1 024, some 80 MB in all.
    const bound = 2 * 1024 * 1024;
    const buffer = new IngestBuffer(100_000, bound);
    const { committed, peak } = await drainShards(installs, 150, buffer, (b) => b.bytes());
    for (const ids of committed.values()) expect(ids).toEqual(Array.from({ length: 150 }, (_, n) => n));
    // Requests are sized at the mean size of the events held, exact here from the first one
    // on. Before it, 4 KB each is expected: the shards' first requests (PULL_MIN events each)
    // may bring more than they reserved, and on a busy machine they may still be open when
    // the others have filled the buffer. Nothing else goes over.
    expect(peak).toBeLessThanOrEqual(bound + SHARDS * PULL_MIN * (pad + 1024));
    expect(peak).toBeGreaterThan(bound / 2);
    await until('nothing held', () => buffer.bytes() === 0 && buffer.size() === 0, { timeoutMs: 5_000 });
  });

  it('a batch stops taking events at maxBatchBytes, blobs counted at their size', async () => {
    const install = installOn(0);
    const blobs = memoryBlobs();
    // Every event goes to a blob: its message holds only the ref.
    await backlog(60, [install], { pad: 20_000, blobs, maxPayload: 4096 });
    expect(blobs.size()).toBe(60);
    const batches: number[] = [];
    const committed: number[] = [];
    const gate = deferred<void>();
    const buffer = new IngestBuffer(4096);
    await start(
      0,
      buffer,
      async (events) => {
        await gate;
        batches.push(events.length);
        for (const ev of events) committed.push((ev.payload as { n: number }).n);
      },
      { maxBatchBytes: 100_000, blobs },
    );
    // Everything in hand before the first batch is let through: each batch could take all the rest.
    await until('every event in hand', () => buffer.size() === 60, { timeoutMs: 10_000 });
    gate.resolve();
    await until('every event committed', () => committed.length === 60, { timeoutMs: 15_000 });
    expect(committed).toEqual(Array.from({ length: 60 }, (_, n) => n));
    // 20 KB each: a batch passes 100 000 bytes with its fifth event and takes no sixth.
    expect(Math.max(...batches)).toBe(5);
    expect(batches.filter((n) => n === 5).length).toBeGreaterThanOrEqual(10);
  });
});
