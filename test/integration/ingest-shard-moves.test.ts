/**
 * integration: an install's backlog survives many shard moves (found by the chaos suite's
 * node kills and rebalances). Each graceful move hands the events queued behind the running
 * one back to the stream (nak), and the server counts every hand-back as a delivery, so an
 * event that was never attempted reaches `maxDeliver` after enough moves. INTERFACE §9:
 * only an event that cannot be stored goes to dead letters; a moved event is stored.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { ingestAttempts } from '../../src/ingest/attempts.js';
import { ShardIngestConsumer } from '../../src/ingest/consumer.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { kvPort } from '../../src/runtime/kv-port.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { openKv } from '../../src/runtime/nats.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { until } from '../support/until.js';

const MAX_DELIVER = 3;
const MOVES = MAX_DELIVER + 2;
const log = createLogger({ level: 'silent', node: 'test' });
const noBlobs = {
  put: () => Promise.reject(new Error('no blobs in this test')),
  get: async () => null,
  delete: async () => undefined,
};

function event(id: string): IngestEvent {
  return {
    installId: 'ix',
    tenantId: 't1',
    connectorId: 'codehost',
    id,
    kind: 'issues',
    occurredAt: null,
    payload: {},
  };
}

describe('integration: ingest backlog across shard moves', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const streams: string[] = [];
  const buckets: string[] = [];
  const running = new Set<ShardIngestConsumer>();

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    for (const c of running) await c.stop();
    for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
    for (const b of buckets) await jsm.streams.delete(`KV_${b}`).catch(() => undefined);
    await nc.close();
  });

  /** One shard's stream, the dedup bucket as node.ts wires it, and owners that record what they did. */
  async function shard(ackWaitMs: number) {
    const names = makeNames(freshNamespace('moves'));
    await ensureIngestStream(jsm, names);
    streams.push(names.ingestStream, names.ingestMaxedStream);
    buckets.push(names.dedupBucket);
    const attempts = ingestAttempts(
      kvPort(await openKv(nc, names.dedupBucket, { ttlMs: 600_000 })),
      names.ingestStream,
    );
    const publisher = new IngestPublisher({ js: jetstream(nc), names, shards: 1, blobs: noBlobs, maxPayload: 1 << 20 });
    const stored: string[] = [];
    const dead: Array<{ msgId: string | null; error: string }> = [];
    const owner = (onDeliver: (id: string) => Promise<void>, conn = nc, maxBatch = 256) => {
      const c = new ShardIngestConsumer({
        js: jetstream(conn),
        jsm,
        names,
        shard: 0,
        log,
        maxDeliver: MAX_DELIVER,
        maxBatch,
        attempts,
        ackWaitMs,
        blobs: noBlobs,
        deadLetters: { record: async (d) => void dead.push({ msgId: d.msgId, error: d.error }) },
        // All or nothing, as the ingest transaction: a batch is stored once every event passed.
        deliver: async (events) => {
          for (const ev of events) await onDeliver(ev.id);
          stored.push(...events.map((ev) => ev.id));
        },
      });
      running.add(c);
      return c;
    };
    return { publish: (id: string) => publisher.publish(event(id)), stored, dead, owner };
  }

  it('an event handed back by more moves than maxDeliver is still stored, never dead-lettered', async () => {
    const { publish, stored, dead, owner } = await shard(5_000);
    const ids = Array.from({ length: MOVES + 2 }, (_, i) => `e${i}`);
    for (const id of ids) await publish(id);

    // Each owner commits one event, slowly; the shard moves meanwhile (graceful release),
    // so the events queued behind it go back to the stream for the next owner.
    for (let move = 0; move < MOVES; move++) {
      let started: string | null = null;
      let finish!: () => void;
      const gate = new Promise<void>((r) => (finish = r));
      // One event per delivery: each owner must hand the rest of the backlog back.
      const c = owner(
        async (id) => {
          started ??= id;
          if (id === started) await gate;
        },
        nc,
        1,
      );
      await c.start();
      // Before the fix the backlog was dead-lettered by now, never attempted: nothing left to start.
      await until(`owner ${move} to start an event`, () => started !== null || dead.length > 0);
      if (started === null) {
        await c.stop();
        break;
      }
      // Every remaining event is in this owner's hands (queued behind the running one).
      await until(
        `owner ${move} to hold the backlog`,
        () => stored.length + dead.length + c.stats().inFlight === ids.length,
      );
      const stopping = c.stop();
      finish();
      await stopping;
      running.delete(c);
    }

    const last = owner(async () => undefined);
    await last.start();
    await until('every event stored or dead-lettered', () => stored.length + dead.length === ids.length);
    expect(dead).toEqual([]);
    expect(stored).toEqual(ids);
  });

  it('an event that takes its owner down on every attempt is still dead-lettered after maxDeliver attempts', async () => {
    const { publish, stored, dead, owner } = await shard(1_000);
    await publish('crasher');
    await publish('after');
    // Each owner dies in the middle of the event: its connection goes, nothing is settled.
    for (let attempt = 1; attempt <= MAX_DELIVER; attempt++) {
      const conn = await connect({ servers: testNatsUrl() });
      let reached = false;
      const c = owner(async (id) => {
        if (id === 'crasher') reached = true;
        await new Promise(() => undefined);
      }, conn);
      await c.start();
      await until(`attempt ${attempt} to run`, () => reached, { timeoutMs: 15_000 });
      running.delete(c);
      await conn.close();
    }
    const last = owner(async () => undefined);
    await last.start();
    await until('the crasher dead-lettered and the next event stored', () => dead.length === 1 && stored.length === 1);
    expect(dead[0]?.msgId).toBe('ix:crasher');
    expect(dead[0]?.error).toMatch(/^not settled after 3 attempts/);
    expect(stored).toEqual(['after']);
  });
});
