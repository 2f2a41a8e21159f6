/**
 * The node-wide bound on ingest events held (runtime/ingest-buffer.ts, ingest-pull.ts),
 * against real JetStream: shards that share a buffer hold no more than it together, and a
 * full node still takes the redelivery its lanes wait for.
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, deferred, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { IngestBuffer } from '../../src/runtime/ingest-buffer.js';
import { ShardIngestConsumer } from '../../src/runtime/ingest-consumer.js';
import { PULL_LEAST } from '../../src/runtime/ingest-pull.js';
import { ensureIngestStream, IngestPublisher } from '../../src/runtime/ingest-stream.js';
import { installKey, names as makeNames, shardOf, type Names } from '../../src/runtime/names.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { memoryBlobs, memoryDeadLetters } from '../support/ingest-ports.js';
import { until } from '../support/until.js';

const log = createLogger({ level: 'silent', node: 'test' });
const SHARDS = 4;

function event(installId: string, n: number): IngestEvent {
  const id = `e${n}`;
  return { installId, tenantId: 't1', connectorId: 'chatapp', id, kind: 'message', occurredAt: null, payload: { n } };
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
  });

  afterAll(async () => {
    await nc.drain();
  });

  async function backlog(perInstall: number, installs: string[]): Promise<void> {
    names = makeNames(freshNamespace('inbuf'));
    await ensureIngestStream(jsm, names);
    const publisher = new IngestPublisher({
      js,
      names,
      shards: SHARDS,
      blobs: memoryBlobs(),
      maxPayload: nc.info!.max_payload,
    });
    for (let n = 0; n < perInstall; n++) await Promise.all(installs.map((i) => publisher.publish(event(i, n))));
  }

  function start(
    shard: number,
    buffer: IngestBuffer,
    deliver: (events: IngestEvent[]) => Promise<void>,
    extra: { nakBaseMs?: number; ackWaitMs?: number } = {},
  ): Promise<void> {
    const c = new ShardIngestConsumer({
      js,
      jsm,
      names,
      shard,
      log,
      blobs: memoryBlobs(),
      deadLetters: memoryDeadLetters(),
      deliver,
      buffer,
      ...extra,
    });
    running.push(c);
    return c.start();
  }

  const ordered = (ids: number[]) => ids.every((n, i) => i === 0 || ids[i - 1]! < n);

  it('four backlogged shards sharing a buffer of 100 never hold more than 100 events, and commit every one in order', async () => {
    const installs = Array.from({ length: SHARDS }, (_, s) => installOn(s));
    await backlog(300, installs);
    const buffer = new IngestBuffer(100);
    const committed = new Map<string, number[]>(installs.map((i) => [i, []]));
    let peak = 0;
    const sample = setInterval(() => (peak = Math.max(peak, buffer.size())), 2);
    try {
      const deliver = async (events: IngestEvent[]) => {
        peak = Math.max(peak, buffer.size());
        await new Promise((r) => setTimeout(r, 5));
        for (const ev of events) committed.get(ev.installId)!.push((ev.payload as { n: number }).n);
      };
      await Promise.all(installs.map((_, s) => start(s, buffer, deliver)));
      await until('every event committed', () => [...committed.values()].every((c) => c.length === 300), {
        timeoutMs: 30_000,
      });
    } finally {
      clearInterval(sample);
    }
    for (const ids of committed.values()) {
      expect(ordered(ids)).toBe(true);
      expect(new Set(ids).size).toBe(300);
    }
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
    await new Promise((r) => setTimeout(r, 100));
    const consumer = await js.consumers.get(names.ingestStream, names.ingestConsumer(0));
    const stolen = await consumer.next({ expires: 5_000 });
    expect(stolen).not.toBeNull();
    gate.resolve();
    await until('every event committed', () => committed.length === 100, { timeoutMs: 15_000 });
    expect(committed).toEqual(Array.from({ length: 100 }, (_, n) => n));
  });
});
