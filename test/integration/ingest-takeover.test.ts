/**
 * integration: a shard owner dies after committing events and before acking them (the
 * common case with group commit: COMMIT, then acks that never leave). Its successor asks
 * Postgres which of the unsettled events are stored (src/ingest/takeover.ts): an
 * install whose unsettled events are all stored goes on at once, a newer event of it is
 * committed before the old ones are redelivered; an install with an event that is not
 * stored still waits for its redelivery (order kept).
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { ShardIngestConsumer } from '../../src/ingest/consumer.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames } from '../../src/runtime/names.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { createPool } from '../../src/store/db.js';
import { insertEvents, newEventOf } from '../../src/store/events.js';
import { createInstall, type Install } from '../../src/store/installs.js';
import { pgStoredEventsPort } from '../../src/store/runtime-ports.js';
import { createTenant } from '../../src/store/tenants.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { LogCapture } from '../support/log-capture.js';
import { until } from '../support/until.js';

/** The production default: the test shows the stored events' install does not wait for it. */
const ACK_WAIT_MS = 10_000;
const noBlobs = {
  put: () => Promise.reject(new Error('no blobs in this test')),
  get: async () => null,
  delete: async () => undefined,
};

/** The ingest transaction's event rows, as the install actor writes them. */
function store(pool: Pool, events: IngestEvent[]): Promise<boolean[]> {
  return insertEvents(pool, events.map(newEventOf));
}

describe('integration: takeover of events committed and never acked', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let pool: Pool;
  let successor: ShardIngestConsumer | null = null;
  const streams: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
    jsm = await jetstreamManager(nc);
    pool = createPool(testDatabaseUrl(), { max: 4 });
  });

  afterAll(async () => {
    await successor?.stop();
    for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
    await nc.close();
    await pool.end();
  });

  async function install(): Promise<Install> {
    const { tenant_id } = await createTenant(pool, TEST_MASTER_KEY, 'takeover');
    return createInstall(pool, { tenantId: tenant_id, connectorId: 'chatapp', externalId: `T${Math.random()}` });
  }

  it('a newer event of an install whose unsettled events are stored commits before their redelivery; one with an unstored event waits', async () => {
    const names = makeNames(freshNamespace('takeover'));
    await ensureIngestStream(jsm, names);
    streams.push(names.ingestStream, names.ingestMaxedStream);
    const [a, b] = [await install(), await install()];
    const event = (inst: Install, id: string): IngestEvent => ({
      installId: inst.install_id,
      tenantId: inst.tenant_id,
      connectorId: 'chatapp',
      id,
      kind: 'message',
      occurredAt: null,
      payload: { id },
    });
    const publisher = new IngestPublisher({ js: jetstream(nc), names, shards: 1, blobs: noBlobs, maxPayload: 1 << 20 });
    for (const id of ['a1', 'a2']) await publisher.publish(event(a, id));
    for (const id of ['b1', 'b2']) await publisher.publish(event(b, id));

    // The victim commits A's events and dies before acking the batch holding a2; it dies
    // in the middle of B's first batch, before its commit. Its connection is its life.
    const victimConn = await connect({ servers: testNatsUrl() });
    const hung = new Set<string>();
    const victim = new ShardIngestConsumer({
      js: jetstream(victimConn),
      jsm: await jetstreamManager(victimConn),
      names,
      shard: 0,
      log: createLogger({ level: 'silent', node: 'victim' }),
      ackWaitMs: ACK_WAIT_MS,
      blobs: noBlobs,
      deadLetters: { record: () => Promise.reject(new Error('no dead letters here')) },
      deliver: async (events) => {
        if (events[0]!.installId === b.install_id) {
          hung.add('b');
          return new Promise<void>(() => undefined);
        }
        await store(pool, events);
        if (events.some((ev) => ev.id === 'a2')) {
          hung.add('a');
          return new Promise<void>(() => undefined);
        }
      },
    });
    await victim.start();
    await until('the victim to hold A committed and B uncommitted', () => hung.has('a') && hung.has('b'));
    await until(
      'every event delivered to the victim',
      async () => (await jsm.consumers.info(names.ingestStream, names.ingestConsumer(0))).delivered.stream_seq === 4,
    );
    await victimConn.close();
    const stored = async (inst: Install) =>
      (
        await pool.query<{ id: string }>('SELECT id FROM events WHERE install_id = $1 ORDER BY seq', [inst.install_id])
      ).rows.map((r) => r.id);
    expect(await stored(a)).toEqual(['a1', 'a2']);
    expect(await stored(b)).toEqual([]);

    // Newer events of both installs are there for the successor at once.
    await publisher.publish(event(a, 'a3'));
    await publisher.publish(event(b, 'b3'));
    const got: Array<{ id: string; deliveryCount: number; redeliveredBefore: number | null }> = [];
    const logs = new LogCapture();
    successor = new ShardIngestConsumer({
      js: jetstream(nc),
      jsm,
      names,
      shard: 0,
      log: createLogger({ level: 'info', node: 'successor' }, logs.stream),
      ackWaitMs: ACK_WAIT_MS,
      blobs: noBlobs,
      deadLetters: { record: () => Promise.reject(new Error('no dead letters here')) },
      storedEvents: pgStoredEventsPort(pool),
      deliver: async (events, meta) => {
        // What the server had redelivered of this shard when a3 was committed.
        const redeliveredBefore = events.some((ev) => ev.id === 'a3')
          ? (await jsm.consumers.info(names.ingestStream, names.ingestConsumer(0))).num_redelivered
          : null;
        await store(pool, events);
        for (const [i, ev] of events.entries())
          got.push({ id: ev.id, deliveryCount: meta[i]!.deliveryCount, redeliveredBefore });
      },
    });
    await successor.start();
    // Done once every event is in Postgres and the stream is empty (work-queue retention:
    // the stored events' redeliveries were acked too).
    await until(
      'every event stored and every message acked',
      async () =>
        (await stored(b)).length === 3 &&
        (await stored(a)).length === 3 &&
        (await jsm.streams.info(names.ingestStream)).state.messages === 0,
      { timeoutMs: ACK_WAIT_MS * 4 },
    );

    const [takeover] = logs.find('unsettled ingest events of an earlier owner');
    // a2 and b1, b2 at least (a1 too when it shared a2's batch); A's are stored.
    expect(takeover?.unsettled).toBeGreaterThanOrEqual(3);
    expect(takeover?.stored).toBe((takeover?.unsettled as number) - 2);

    // A did not wait: a3 was the successor's first A event, a first delivery, committed
    // before the server had redelivered anything; the old A events came back after it.
    const ofA = got.filter((g) => g.id.startsWith('a'));
    expect(ofA[0]).toEqual({ id: 'a3', deliveryCount: 1, redeliveredBefore: 0 });
    expect(ofA.slice(1).every((g) => g.deliveryCount > 1)).toBe(true);
    expect(ofA.slice(1).map((g) => g.id)).toContain('a2');
    // B's unstored events held its lane: redelivered and committed before b3.
    const ofB = got.filter((g) => g.id.startsWith('b'));
    expect(ofB.map((g) => g.id)).toEqual(['b1', 'b2', 'b3']);
    expect(ofB.map((g) => g.deliveryCount > 1)).toEqual([true, true, false]);
    // Stored once each; the redelivered a events inserted nothing.
    expect(await stored(a)).toEqual(['a1', 'a2', 'a3']);
    expect(await stored(b)).toEqual(['b1', 'b2', 'b3']);
  }, 90_000);
});
