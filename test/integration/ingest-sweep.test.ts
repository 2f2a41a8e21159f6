/**
 * integration: acknowledged ingest messages the stream kept are removed by the shard's
 * owner (src/ingest/sweep.ts). A nats-server killed with SIGKILL comes back with
 * some acked messages of the work-queue stream still stored, below the consumer's ack
 * floor; that state cannot be made on demand, so the stream here keeps every message
 * (limits retention) and the acked ones stand in for them. The sweep removes the shard's
 * messages at or below its ack floor and nothing else: not the unacked ones, not another
 * shard's, and the consumer goes on delivering and redelivering as before. A message the
 * server gave up at the consumer's max_deliver lies below the floor unacked: it is
 * dead-lettered from its advisory (src/ingest/max-deliveries.ts), and the sweep waits for that.
 */
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { MaxedDeadLetterer } from '../../src/ingest/max-deliveries.js';
import { RefusalLog } from '../../src/ingest/refusals.js';
import { ensureIngestConsumer, ensureMaxedStream, SERVER_MAX_DELIVER } from '../../src/ingest/stream.js';
import { createSeal } from '../../src/runtime/seal.js';
import { AckedSweeper, sweepAcked } from '../../src/ingest/sweep.js';
import { names as makeNames, type Names } from '../../src/runtime/names.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { until } from '../support/until.js';

describe('integration: sweeping acknowledged ingest messages the stream kept', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let js: JetStreamClient;
  let names: Names;

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
    names = makeNames(freshNamespace('sweep'));
    await jsm.streams.add({
      name: names.ingestStream,
      subjects: [`${names.ns}.ingest.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
    });
    await ensureMaxedStream(jsm, names);
    for (const shard of [0, 1]) await ensureIngestConsumer(jsm, names, shard, { ackWaitMs: 30_000, maxAckPending: 64 });
  });

  afterAll(async () => {
    await jsm.streams.delete(names.ingestStream).catch(() => undefined);
    await jsm.streams.delete(names.ingestMaxedStream).catch(() => undefined);
    await nc.close();
  });

  async function publish(shard: number, n: number): Promise<number[]> {
    const seqs: number[] = [];
    // Two installs per shard: the sweep looks for each install's subject on its own.
    for (let i = 0; i < n; i++) {
      seqs.push((await js.publish(`${names.ns}.ingest.${shard}.chatapp.i${shard}-${i % 2}`, 'e')).seq);
    }
    return seqs;
  }

  async function pull(shard: number, n: number): Promise<JsMsg[]> {
    const consumer = await js.consumers.get(names.ingestStream, names.ingestConsumer(shard));
    const out: JsMsg[] = [];
    for await (const m of await consumer.fetch({ max_messages: n, expires: 5_000 })) out.push(m);
    return out;
  }

  const stored = async () => (await jsm.streams.info(names.ingestStream)).state.messages;

  it('removes what lies at or below the ack floor of that shard only, and delivery goes on', async () => {
    const first = await publish(0, 10);
    await publish(1, 5);
    const zero = await pull(0, 10);
    expect(zero.map((m) => m.seq)).toEqual(first);
    for (const m of zero.slice(0, 6)) await m.ackAck();
    for (const m of await pull(1, 5)) await m.ackAck();
    expect((await jsm.consumers.info(names.ingestStream, names.ingestConsumer(0))).ack_floor.stream_seq).toBe(first[5]);

    expect(await sweepAcked(jsm, names, 0)).toBe(6);
    expect(await stored()).toBe(4 + 5);
    const info = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(0));
    expect(info.num_ack_pending).toBe(4);
    expect(info.num_pending).toBe(0);
    expect(await sweepAcked(jsm, names, 0)).toBe(0);

    // The unacked ones are still the consumer's to settle (a purge by filter dropped the
    // consumer's pending state on nats-server 2.9: nothing nak'd came back), and new events come after them.
    zero[6]!.nak();
    const back = await pull(0, 1);
    expect(back.map((m) => [m.seq, m.info.deliveryCount])).toEqual([[first[6], 2]]);
    for (const m of [...back, ...zero.slice(7)]) expect(await m.ackAck()).toBe(true);
    const later = await publish(0, 2);
    expect((await pull(0, 2)).map((m) => m.seq)).toEqual(later);
    expect(await sweepAcked(jsm, names, 0)).toBe(4);
    expect(await stored()).toBe(2 + 5);

    expect(await sweepAcked(jsm, names, 1)).toBe(5);
    expect(await stored()).toBe(2);
  });

  it('a shard owner sweeps when it starts and says how many it removed', async () => {
    const seqs = await publish(1, 3);
    for (const m of await pull(1, 3)) await m.ackAck();
    const logs = new LogCapture();
    const sweeper = new AckedSweeper({
      jsm,
      names,
      shard: 1,
      firstWithinMs: 0,
      log: createLogger({ level: 'debug', node: 'sweep-test' }, logs.stream),
    });
    sweeper.start();
    try {
      await until(
        'the sweep at start',
        () => logs.find('removed acknowledged ingest messages', LOG_LEVEL.warn).length === 1,
      );
      expect(logs.find('removed acknowledged ingest messages')[0]!.removed).toBe(seqs.length);
    } finally {
      sweeper.stop();
    }
  });

  it('a message past max_deliver is dead-lettered from its advisory (a forged one dropped); the sweep waits for that', async () => {
    const shard = 2;
    await ensureIngestConsumer(jsm, names, shard, { ackWaitMs: 30_000, maxAckPending: 64, maxDeliver: 2 });
    const seal = createSeal(['fence-test-master-key-0123456789abcdef']);
    const subject = `${names.ns}.ingest.${shard}.chatapp.00000000-0000-4000-8000-00000000000a`;
    const body = new TextEncoder().encode('{"stuck":true}');
    const stuck = (await js.publish(subject, body, { msgID: 'stuck', headers: seal.headers(body) })).seq;
    const forged = (await js.publish(subject, 'forged', { msgID: 'forged' })).seq;
    const fine = (await js.publish(subject, 'fine', { msgID: 'fine' })).seq;
    // An owner that never settles the first two (each delivery crashes it, say): nak, twice.
    for (let round = 1; round <= 2; round++) {
      for (const m of await pull(shard, round === 1 ? 3 : 2)) {
        if (m.seq === fine) await m.ackAck();
        else m.nak();
      }
    }
    // The server gives a message up when it would deliver it again: one more pull, which gets nothing.
    const next = await (
      await js.consumers.get(names.ingestStream, names.ingestConsumer(shard))
    ).next({ expires: 1_000 });
    expect(next).toBeNull();
    await until('both advisories kept', async () => {
      const info = await jsm.streams.info(names.ingestMaxedStream, {
        subjects_filter: names.ingestMaxedSubject(shard),
      });
      return (info.state.subjects?.[names.ingestMaxedSubject(shard)] ?? 0) === 2;
    });
    // The next ack moves the floor past both, though nothing acked them.
    const later = (await js.publish(subject, 'later', { msgID: 'later' })).seq;
    for (const m of await pull(shard, 1)) await m.ackAck();
    const consumer = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard));
    expect(consumer.config.max_deliver).toBe(2);
    expect(consumer.num_ack_pending).toBe(0);
    expect(consumer.ack_floor.stream_seq).toBe(later);

    // Their advisories wait: the sweep deletes nothing, not even the acked ones.
    expect(await sweepAcked(jsm, names, shard)).toBe(0);
    expect(await jsm.streams.getMessage(names.ingestStream, { seq: stuck })).not.toBeNull();

    const dead: Array<{
      streamSeq: number;
      deliveries: number;
      error: string;
      payload: Uint8Array;
      msgId: string | null;
    }> = [];
    let refused = 0;
    const maxed = new MaxedDeadLetterer({
      js,
      jsm,
      names,
      shard,
      log: createLogger({ level: 'silent', node: 'maxed-test' }),
      deadLetters: { record: async (d) => void dead.push(d) },
      seal,
      refusals: new RefusalLog({
        log: createLogger({ level: 'silent', node: 'maxed-test' }),
        onRefused: () => refused++,
      }),
    });
    maxed.start();
    try {
      await until('the advisories handled', async () => {
        const info = await jsm.streams.info(names.ingestMaxedStream, {
          subjects_filter: names.ingestMaxedSubject(shard),
        });
        return (info.state.subjects?.[names.ingestMaxedSubject(shard)] ?? 0) === 0;
      });
    } finally {
      await maxed.stop();
    }
    // The sealed one is a dead letter, whole (replayable) and with its cause; the forged one is refused.
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ streamSeq: stuck, deliveries: 2, msgId: 'stuck' });
    expect(dead[0]!.error).toMatch(/max_deliver/);
    expect(Buffer.from(dead[0]!.payload)).toEqual(Buffer.from(body));
    expect(refused).toBe(1);
    for (const seq of [stuck, forged]) expect(await jsm.streams.getMessage(names.ingestStream, { seq })).toBeNull();
    // Now the acked ones below the floor go.
    expect(await sweepAcked(jsm, names, shard)).toBe(2);
    for (const seq of [fine, later]) expect(await jsm.streams.getMessage(names.ingestStream, { seq })).toBeNull();
  });

  it('a consumer made with unlimited deliveries (before issue 32) is given the server bound', async () => {
    await jsm.consumers.add(names.ingestStream, {
      durable_name: names.ingestConsumer(3),
      filter_subject: names.ingestShardFilter(3),
      ack_policy: AckPolicy.Explicit,
      max_deliver: -1,
    });
    await ensureIngestConsumer(jsm, names, 3, { ackWaitMs: 30_000, maxAckPending: 64 });
    const info = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(3));
    expect(info.config.max_deliver).toBe(SERVER_MAX_DELIVER);
  });
});
