/** Durable ingest against real JetStream: order, dedup, blobs, retries, dead letters, stop. */
import {
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, deferred, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Unavailable } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { DeliveryRoom } from '../../src/ingest/delivery-room.js';
import { ShardIngestConsumer } from '../../src/ingest/consumer.js';
import type { IngestDeliveryMeta } from '../../src/ingest/settle.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { installKey, names as makeNames, shardOf, type Names } from '../../src/runtime/names.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { startNatsChild, type NatsChild } from '../support/nats-restart-server.js';
import { until } from '../support/until.js';
import { eachEvent } from '../support/each-event.js';
import { memoryBlobs, memoryDeadLetters } from '../support/ingest-ports.js';

const log = createLogger({ level: 'silent', node: 'test' });

function event(installId: string, id: string, payload: unknown = { n: id }): IngestEvent {
  return { installId, tenantId: 't1', connectorId: 'chatapp', id, kind: 'message', occurredAt: null, payload };
}

/** An install id whose events land on `shard` of `shards`. */
function installOn(shard: number, shards: number, prefix: string): string {
  for (let i = 0; ; i++) if (shardOf(installKey(`${prefix}${i}`), shards) === shard) return `${prefix}${i}`;
}

describe('integration: ingest stream and shard consumer', () => {
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const streams: string[] = [];
  const running: ShardIngestConsumer[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
  });

  afterAll(async () => {
    for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
    await nc.drain();
  });

  async function setup(shards = 1) {
    const names: Names = makeNames(freshNamespace('ing'));
    await ensureIngestStream(jsm, names);
    streams.push(names.ingestStream, names.ingestMaxedStream);
    const blobs = memoryBlobs();
    const deadLetters = memoryDeadLetters();
    const publisher = new IngestPublisher({ js, names, shards, blobs, maxPayload: nc.info!.max_payload });
    const consumer = (
      shard: number,
      deliver: (ev: IngestEvent, meta: IngestDeliveryMeta) => Promise<void>,
      extra: { maxDeliver?: number; nakBaseMs?: number; maxBatch?: number } = {},
    ) => {
      const c = new ShardIngestConsumer({
        js,
        jsm,
        names,
        shard,
        log,
        blobs,
        deadLetters,
        deliver: eachEvent(deliver),
        flush: () => nc.flush(),
        ...extra,
      });
      running.push(c);
      return c;
    };
    /** A consumer whose delivery sees whole batches, as the install actor's transaction does. */
    const batchConsumer = (
      deliver: (events: IngestEvent[], meta: IngestDeliveryMeta[], opts?: { alone?: boolean }) => Promise<void>,
      extra: { maxDeliver?: number; nakBaseMs?: number; room?: DeliveryRoom } = {},
    ) => {
      const c = new ShardIngestConsumer({ js, jsm, names, shard: 0, log, blobs, deadLetters, deliver, ...extra });
      running.push(c);
      return c;
    };
    const streamMessages = async () => (await jsm.streams.info(names.ingestStream)).state.messages;
    return { names, blobs, deadLetters, publisher, consumer, batchConsumer, streamMessages };
  }

  it('ensureIngestStream is idempotent and makes a file-backed work queue with a 6 min window', async () => {
    const { names } = await setup();
    await ensureIngestStream(jsm, names);
    const { config } = await jsm.streams.info(names.ingestStream);
    expect(config).toMatchObject({
      retention: 'workqueue',
      storage: 'file',
      subjects: [names.ingestSubjects],
      duplicate_window: 360e9,
    });
  });

  it("an existing stream with an older, shorter window gets the 6 min one (Slack's retries span 5 min)", async () => {
    const names: Names = makeNames(freshNamespace('ingw'));
    await jsm.streams.add({
      name: names.ingestStream,
      subjects: [names.ingestSubjects],
      storage: StorageType.File,
      retention: RetentionPolicy.Workqueue,
      duplicate_window: 120e9,
    });
    streams.push(names.ingestStream, names.ingestMaxedStream);
    await ensureIngestStream(jsm, names);
    const { config } = await jsm.streams.info(names.ingestStream);
    expect(config.duplicate_window).toBe(360e9);
    expect(config.duplicate_window).toBeGreaterThanOrEqual(5 * 60e9);
  });

  it('delivers each install in order, installs concurrently, and acks (work queue empties)', async () => {
    const { publisher, consumer, streamMessages } = await setup();
    const installs = ['inst-a', 'inst.b*', 'inst c'];
    for (let i = 0; i < 20; i++) for (const inst of installs) await publisher.publish(event(inst, `e${i}`));
    const got = new Map<string, string[]>();
    let active = 0;
    let maxActive = 0;
    const c = consumer(0, async (ev) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, Math.random() * 5)); // handlers of uneven length
      got.set(ev.installId, [...(got.get(ev.installId) ?? []), ev.id]);
      active--;
    });
    await c.start();
    await until('60 events delivered', () => c.stats().delivered === 60, { timeoutMs: 15_000 });
    for (const inst of installs) expect(got.get(inst)).toEqual(Array.from({ length: 20 }, (_, i) => `e${i}`));
    expect(maxActive).toBeGreaterThan(1);
    expect(maxActive).toBeLessThanOrEqual(installs.length);
    await until('the work queue empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
    expect(c.stats()).toMatchObject({ inFlight: 0, redeliveries: 0, deadLettered: 0 });
  });

  it('a duplicate publish inside the window is acked as duplicate and delivered once', async () => {
    const { publisher, consumer } = await setup();
    const first = await publisher.publish(event('i1', 'same'));
    const again = await publisher.publish(event('i1', 'same'));
    const longId = 'x'.repeat(400);
    const l1 = await publisher.publish(event('i1', longId));
    const l2 = await publisher.publish(event('i1', longId));
    expect(first.duplicate).toBe(false);
    expect(again).toEqual({ seq: first.seq, duplicate: true });
    expect(l2).toEqual({ seq: l1.seq, duplicate: true });
    const seen: string[] = [];
    const c = consumer(0, async (ev) => void seen.push(ev.id));
    await c.start();
    // One shard's events arrive in stream order: once a later one is seen, no second copy is still to come.
    await publisher.publish(event('i1', 'later'));
    await until("'later' seen", () => seen.includes('later'), { timeoutMs: 15_000 });
    expect(seen).toEqual(['same', longId, 'later']);
  });

  it('a payload larger than max_payload travels by blob ref, arrives intact, and the blob is deleted', async () => {
    const { publisher, consumer, blobs, streamMessages } = await setup();
    const big = { text: 'ü'.repeat(nc.info!.max_payload) };
    await publisher.publish(event('i1', 'big', big));
    await publisher.publish(event('i1', 'small'));
    expect(blobs.size()).toBe(1);
    const got: IngestEvent[] = [];
    const c = consumer(0, async (ev) => void got.push(ev));
    await c.start();
    await until('both events received', () => got.length === 2, { timeoutMs: 15_000 });
    expect(got[0]).toEqual(event('i1', 'big', big));
    expect(got[1]?.id).toBe('small');
    await until('the blob deleted', () => blobs.size() === 0, { timeoutMs: 15_000 });
    await until('the work queue empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
  });

  it('a payload given as received JSON text arrives parsed, inline and (over max_payload) by blob ref', async () => {
    const { publisher, consumer, blobs } = await setup();
    const small = '{ "action": "opened",  "n": 1 }';
    const big = JSON.stringify({ action: 'edited', text: 'ü'.repeat(nc.info!.max_payload) }, null, 1);
    for (const [id, text] of [
      ['raw-small', small],
      ['raw-big', big],
    ] as const) {
      await publisher.publish({ ...event('i1', id, JSON.parse(text)), payloadJson: Buffer.from(text) });
    }
    expect(blobs.size()).toBe(1);
    const got: IngestEvent[] = [];
    const c = consumer(0, async (ev) => void got.push(ev));
    await c.start();
    await until('both events received', () => got.length === 2, { timeoutMs: 15_000 });
    expect(got).toEqual([event('i1', 'raw-small', JSON.parse(small)), event('i1', 'raw-big', JSON.parse(big))]);
    await until('the blobs deleted', () => blobs.size() === 0, { timeoutMs: 15_000 });
  });

  it('retries a failing delivery with backoff, keeping the install order', async () => {
    const { publisher, consumer } = await setup();
    await publisher.publish(event('i1', 'flaky'));
    await publisher.publish(event('i1', 'next'));
    await publisher.publish(event('i2', 'other'));
    const order: Array<[string, number]> = [];
    const c = consumer(
      0,
      async (ev, meta) => {
        if (ev.id === 'flaky' && meta.deliveryCount < 3) throw new Error('postgres is down');
        order.push([ev.id, meta.deliveryCount]);
      },
      { nakBaseMs: 100 },
    );
    await c.start();
    await until('three events in order', () => order.length === 3, { timeoutMs: 15_000 });
    const i1 = order.filter(([id]) => id !== 'other');
    expect(i1).toEqual([
      ['flaky', 3],
      ['next', 1],
    ]);
    // The other install was not held up by i1's failures.
    expect(order[0]).toEqual(['other', 1]);
    expect(c.stats()).toMatchObject({ delivered: 3, redeliveries: 2, deadLettered: 0 });
  });

  it('stop() hands held events back behind their failed head, so the next owner keeps the order', async () => {
    const { publisher, consumer } = await setup();
    await publisher.publish(event('i1', 'head'));
    await publisher.publish(event('i1', 'behind'));
    let attempts = 0;
    const first = consumer(
      0,
      async () => {
        attempts++;
        throw new Error('down');
      },
      // One event per delivery: a failed batch is delivered again event by event, which would count twice here.
      { nakBaseMs: 600, maxBatch: 1 },
    );
    await first.start();
    await until('the first attempt in flight', () => attempts === 1 && first.stats().inFlight === 1, {
      timeoutMs: 15_000,
    });
    await first.stop();
    expect(attempts).toBe(1);
    const order: string[] = [];
    const second = consumer(0, async (ev) => void order.push(ev.id));
    await second.start();
    await until('two events in order', () => order.length === 2, { timeoutMs: 15_000 });
    expect(order).toEqual(['head', 'behind']);
  });

  it('dead-letters an event that always fails after maxDeliver, and later events still flow', async () => {
    const { publisher, consumer, deadLetters, streamMessages, names } = await setup();
    await publisher.publish(event('i1', 'poison'));
    await publisher.publish(event('i1', 'after'));
    const seen: string[] = [];
    const c = consumer(
      0,
      async (ev) => {
        if (ev.id === 'poison') throw new Error('constraint violated');
        seen.push(ev.id);
      },
      { maxDeliver: 3, nakBaseMs: 50 },
    );
    await c.start();
    await until("'after' seen", () => seen.includes('after'), { timeoutMs: 15_000 });
    await publisher.publish(event('i1', 'later'));
    await until("'later' seen", () => seen.includes('later'), { timeoutMs: 15_000 });
    expect(seen).toEqual(['after', 'later']);
    expect(deadLetters.records).toHaveLength(1);
    expect(deadLetters.records[0]).toMatchObject({
      stream: names.ingestStream,
      msgId: 'i1:poison',
      installId: 'i1',
      deliveries: 3,
      error: 'Error: constraint violated',
    });
    expect(c.stats().deadLettered).toBe(1);
    await until('the work queue empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
  });

  it('dead-letters an undecodable message at once', async () => {
    const { publisher, consumer, deadLetters, names } = await setup();
    const subject = names.ingestSubject(0, 'chatapp', 'i.9');
    await js.publish(subject, new TextEncoder().encode('{not json'), { msgID: 'garbage' });
    await publisher.publish(event('i.9', 'fine'));
    const seen: string[] = [];
    const c = consumer(0, async (ev) => void seen.push(ev.id));
    await c.start();
    await until('one event seen and one dead-lettered', () => seen.length === 1 && deadLetters.records.length === 1, {
      timeoutMs: 15_000,
    });
    expect(deadLetters.records[0]).toMatchObject({ subject, installId: 'i.9', deliveries: 1, msgId: 'garbage' });
    expect(new TextDecoder().decode(deadLetters.records[0]!.payload)).toBe('{not json');
  });

  it('commits a backlog in batches (group commit), each install in order, and acks every event', async () => {
    const { publisher, batchConsumer, streamMessages } = await setup();
    for (let i = 0; i < 120; i++) await publisher.publish(event(i % 3 === 0 ? 'i2' : 'i1', `e${i}`));
    const committed: string[] = [];
    const sizes: number[] = [];
    const c = batchConsumer(async (events) => {
      // A transaction's worth of latency, so the next batch gathers meanwhile.
      await new Promise((r) => setTimeout(r, 30));
      expect(new Set(events.map((e) => e.installId)).size).toBe(1);
      sizes.push(events.length);
      committed.push(...events.map((e) => e.id));
    });
    await c.start();
    await until('every event committed', () => committed.length === 120, { timeoutMs: 15_000 });
    const order = (install: string) =>
      committed
        .filter((id) => (Number(id.slice(1)) % 3 === 0 ? 'i2' : 'i1') === install)
        .map((id) => Number(id.slice(1)));
    expect(order('i1')).toEqual([...order('i1')].sort((a, b) => a - b));
    expect(order('i2')).toEqual([...order('i2')].sort((a, b) => a - b));
    expect(new Set(committed).size).toBe(120);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(sizes.length).toBeLessThan(120);
    await until('stream empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
    expect(c.stats()).toMatchObject({ inFlight: 0, delivered: 120, deadLettered: 0 });
  });

  it('a lane waiting for room to deliver takes everything that arrived meanwhile in one batch', async () => {
    const { publisher, batchConsumer, streamMessages } = await setup();
    const gate = deferred<void>();
    const batches: string[][] = [];
    const c = batchConsumer(
      async (events) => {
        batches.push(events.map((e) => `${e.installId}/${e.id}`));
        if (batches.length === 1) await gate;
      },
      // Room for one batch at a time.
      { room: new DeliveryRoom(1) },
    );
    await c.start();
    await publisher.publish(event('a', 'a0'));
    await until('the first batch fills the room', () => batches.length === 1, { timeoutMs: 10_000 });
    for (let i = 0; i < 10; i++) {
      await publisher.publish(event('b', `b${i}`));
      await publisher.publish(event('c', `c${i}`));
    }
    await until('every event in hand', () => c.stats().inFlight === 21, { timeoutMs: 10_000 });
    gate.resolve();
    await until('every event committed', () => batches.flat().length === 21, { timeoutMs: 10_000 });
    // One batch per waiting install, each in stream order (with room, b0 and c0 would go alone).
    expect(batches.slice(1).sort()).toEqual([
      Array.from({ length: 10 }, (_, i) => `b/b${i}`),
      Array.from({ length: 10 }, (_, i) => `c/c${i}`),
    ]);
    await until('stream empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
  });

  it('a batch failed by an unavailable Postgres is retried whole, not event by event, and commits once in order', async () => {
    const { publisher, batchConsumer, deadLetters, streamMessages } = await setup();
    const gate = deferred<void>();
    const calls: Array<{ ids: string[]; ok: boolean }> = [];
    const c = batchConsumer(
      async (events) => {
        const ids = events.map((e) => `${e.installId}/${e.id}`);
        // Another install's batch holds the only room until i1's five events are all in hand.
        if (events[0]!.installId === 'hold') {
          await gate;
          return;
        }
        const ok = calls.length > 0;
        calls.push({ ids, ok });
        if (!ok) throw new Unavailable('a backing service (Postgres or NATS) did not answer in time; retry');
      },
      { room: new DeliveryRoom(1), nakBaseMs: 50 },
    );
    await c.start();
    await publisher.publish(event('hold', 'h0'));
    await until('the room held', () => c.stats().inFlight === 1, { timeoutMs: 10_000 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) await publisher.publish(event('i1', id));
    await until('every event in hand', () => c.stats().inFlight === 6, { timeoutMs: 10_000 });
    gate.resolve();
    await until('the batch committed', () => calls.some((x) => x.ok), { timeoutMs: 15_000 });
    const whole = ['a', 'b', 'c', 'd', 'e'].map((id) => `i1/${id}`);
    // Failed whole, then delivered whole again once its head came back: no event alone.
    expect(calls).toEqual([
      { ids: whole, ok: false },
      { ids: whole, ok: true },
    ]);
    await until('stream empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
    expect(deadLetters.records).toEqual([]);
    expect(c.stats()).toMatchObject({ inFlight: 0, delivered: 6, deadLettered: 0 });
  });

  it('a poison event fails only itself: its batch neighbours commit once, in order, and it is dead-lettered', async () => {
    const { publisher, batchConsumer, deadLetters, streamMessages } = await setup();
    for (const id of ['a', 'b', 'poison', 'c', 'd']) await publisher.publish(event('i1', id));
    const committed: string[] = [];
    const sizes: number[] = [];
    const poisonAlone: boolean[] = [];
    const c = batchConsumer(
      async (events, _meta, opts) => {
        // All or nothing, as the ingest transaction.
        if (events.some((e) => e.id === 'poison')) {
          poisonAlone.push(opts?.alone === true);
          throw new Error('value too long for type');
        }
        sizes.push(events.length);
        committed.push(...events.map((e) => e.id));
      },
      { maxDeliver: 3, nakBaseMs: 50 },
    );
    await c.start();
    await until('the neighbours committed', () => committed.includes('d'), { timeoutMs: 15_000 });
    expect(committed).toEqual(['a', 'b', 'c', 'd']);
    // Only its first batch may share a transaction with other installs: isolated and
    // redelivered, it is committed alone (ingest/commit.ts).
    await until('the poison dead-lettered', () => deadLetters.records.length === 1, { timeoutMs: 15_000 });
    expect(poisonAlone.length).toBeGreaterThanOrEqual(3);
    expect(poisonAlone).toEqual([false, ...poisonAlone.slice(1).map(() => true)]);
    expect(deadLetters.records.map((r) => r.msgId)).toEqual(['i1:poison']);
    expect(deadLetters.records[0]!.error).toBe('Error: value too long for type');
    await until('stream empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
    expect(c.stats()).toMatchObject({ inFlight: 0, delivered: 4, deadLettered: 1 });
  });

  it('stop() waits for the in-flight delivery to settle and acks it', async () => {
    const { publisher, consumer, streamMessages } = await setup();
    await publisher.publish(event('i1', 'slow'));
    let finished = 0;
    const c = consumer(0, async () => {
      await new Promise((r) => setTimeout(r, 800)); // the handler's work, still going when stop() begins
      finished = Date.now();
    });
    await c.start();
    await until('one delivery in flight', () => c.stats().inFlight === 1, { timeoutMs: 15_000 });
    await c.stop();
    const stoppedAt = Date.now();
    expect(finished).toBeGreaterThan(0);
    expect(stoppedAt).toBeGreaterThanOrEqual(finished);
    expect(c.stats()).toMatchObject({ inFlight: 0, delivered: 1 });
    expect(await streamMessages()).toBe(0);
  });

  it("two shards' consumers never see each other's events", async () => {
    const { publisher, consumer, streamMessages } = await setup(2);
    const on0 = installOn(0, 2, 's0-');
    const on1 = installOn(1, 2, 's1-');
    for (let i = 0; i < 5; i++) {
      await publisher.publish(event(on0, `a${i}`));
      await publisher.publish(event(on1, `b${i}`));
    }
    const seen0: string[] = [];
    const seen1: string[] = [];
    const c0 = consumer(0, async (ev) => void seen0.push(ev.installId));
    const c1 = consumer(1, async (ev) => void seen1.push(ev.installId));
    await Promise.all([c0.start(), c1.start()]);
    // An event leaves the work queue once its handler is done: with the queue empty, every delivery has been seen.
    await until('the work queue empty', async () => (await streamMessages()) === 0, { timeoutMs: 15_000 });
    expect(new Set(seen0)).toEqual(new Set([on0]));
    expect(new Set(seen1)).toEqual(new Set([on1]));
  });
});

describe('integration: ingest across a nats-server crash (private server)', () => {
  let srv: NatsChild;
  let nc: NatsConnection;
  let consumer: ShardIngestConsumer | null = null;

  beforeAll(async () => {
    srv = await startNatsChild();
    nc = await connect({ servers: srv.url, maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 5_000 });
  });

  afterAll(async () => {
    await consumer?.stop();
    await nc?.close();
    await srv?.dispose();
  });

  it(
    'every event whose publish was acknowledged is delivered after a SIGKILL and restart',
    { timeout: 120_000 },
    async () => {
      const names = makeNames(freshNamespace('crash'));
      const jsm = await jetstreamManager(nc);
      const js = jetstream(nc, { timeout: 2_000 });
      await ensureIngestStream(jsm, names);
      const blobs = memoryBlobs();
      const deadLetters = memoryDeadLetters();
      const publisher = new IngestPublisher({ js, names, shards: 1, blobs, maxPayload: nc.info!.max_payload });
      const delivered = new Set<string>();
      let deliveries = 0;
      consumer = new ShardIngestConsumer({
        js,
        jsm,
        names,
        shard: 0,
        log,
        blobs,
        deadLetters,
        ackWaitMs: 2_000,
        nakBaseMs: 100,
        deliver: eachEvent(async (ev) => {
          deliveries++;
          // A Postgres commit's worth of latency, so a backlog is in flight when the server dies.
          await new Promise((r) => setTimeout(r, 20));
          delivered.add(ev.id);
        }),
      });
      await consumer.start();

      const TOTAL = 600;
      const KILL_AT = 200;
      const acked = new Set<string>();
      let publishFailures = 0;
      let duplicates = 0;
      let killed: Promise<void> | null = null;
      let backlogAtKill = 0;
      for (let i = 0; i < TOTAL; i++) {
        const ev = event(`inst-${i % 10}`, `ev-${i}`);
        // Like a webhook sender: retry the same event until JetStream acknowledges it.
        for (;;) {
          try {
            const r = await publisher.publish(ev);
            if (r.duplicate) duplicates++;
            acked.add(ev.id);
            break;
          } catch (err) {
            expect(err).toMatchObject({ kind: 'Unavailable' });
            publishFailures++;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        if (i === KILL_AT) {
          backlogAtKill = [...acked].filter((id) => !delivered.has(id)).length;
          killed = srv
            .kill()
            .then(() => new Promise((r) => setTimeout(r, 1_000)))
            .then(() => srv.restart());
        }
      }
      await killed;
      await until('every acked event delivered', () => [...acked].every((id) => delivered.has(id)), {
        timeoutMs: 60_000,
      });
      const lost = [...acked].filter((id) => !delivered.has(id));
      const s = consumer.stats();
      console.info(
        `[crash test] backlogAtKill=${backlogAtKill} acked=${acked.size} ` +
          `delivered(unique)=${delivered.size} deliveries=${deliveries} ` +
          `lost=${lost.length} publishFailures=${publishFailures} duplicateAcks=${duplicates} ` +
          `redeliveries=${s.redeliveries} deadLettered=${s.deadLettered}`,
      );
      expect(backlogAtKill).toBeGreaterThan(0);
      expect(acked.size).toBe(TOTAL);
      expect(lost).toEqual([]);
      expect(deadLetters.records).toEqual([]);
    },
  );
});
