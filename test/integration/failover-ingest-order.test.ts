/**
 * integration: per-install order across a consumer killed with SIGKILL (found by the
 * end-to-end failover test). The dead owner's unsettled events come back only after the
 * ack wait, while newer events reach the next owner at once; the next owner must still
 * deliver each install's events in stream order, and must not hold back other installs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { ShardIngestConsumer } from '../../src/ingest/consumer.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { type IngestEvent } from '../../src/runtime/ports.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { eachEvent } from '../support/each-event.js';
import { until } from '../support/until.js';

const ACK_WAIT_MS = 1_500;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const log = createLogger({ level: 'silent', node: 'test' });

const noBlobs = {
  put: () => Promise.reject(new Error('no blobs in this test')),
  get: async () => null,
  delete: async () => undefined,
};

function event(installId: string, id: string): IngestEvent {
  return { installId, tenantId: 't1', connectorId: 'chatapp', id, kind: 'message', occurredAt: null, payload: { id } };
}

describe('integration: ingest order across a kill -9 of the shard owner', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let child: ChildProcess | null = null;
  let successor: ShardIngestConsumer | null = null;
  const streams: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await successor?.stop();
    for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
    await nc.close();
  });

  it("the next owner delivers the dead owner's unsettled events before newer ones of the same install", async () => {
    const names = makeNames(freshNamespace('foo'));
    await ensureIngestStream(jsm, names);
    streams.push(names.ingestStream, names.ingestMaxedStream);
    const publisher = new IngestPublisher({
      js: jetstream(nc),
      names,
      shards: 1,
      blobs: noBlobs,
      maxPayload: nc.info!.max_payload,
    });
    for (const id of ['e0', 'e1', 'e2', 'e3']) await publisher.publish(event('ix', id));
    for (const id of ['y0', 'y1']) await publisher.publish(event('iy', id));

    // The victim delivers the y events (and e0 when it is a batch of its own), and dies in
    // the middle of e1 (e2, e3 held).
    child = spawn(process.execPath, ['--import', 'tsx', 'test/support/failover-ingest-node.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        FO_NATS_URL: testNatsUrl(),
        FO_NAMESPACE: names.ns,
        FO_ACK_WAIT_MS: String(ACK_WAIT_MS),
        FO_HANG_ON: 'e1',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const victim: string[] = [];
    const hanging = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`victim never got to hang on e1 with y0, y1 done; saw ${victim.join(',')}`)),
        15_000,
      );
      let hung = false;
      createInterface({ input: child!.stdout! }).on('line', (line) => {
        const e = JSON.parse(line) as { type: string; id?: string };
        if (e.type === 'delivered') victim.push(e.id!);
        if (e.type === 'hanging') hung = true;
        if (hung && victim.includes('y1')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await hanging;
    // e0 is committed when it made a batch of its own, and held with e1 when the lane took
    // e0..e3 together (what is ready when a lane delivers joins its batch).
    // Either way the victim's acks of what it committed land first: e1 (hanging), e2 and
    // e3 stay unsettled, and e0 too when it shared e1's batch (seq 1 is e0, so the floor
    // stays 0 exactly then).
    const e0Committed = victim.includes('e0');
    const unsettled = e0Committed ? 3 : 4;
    await until(
      `the victim's acks of what it committed seen (${unsettled} unsettled)`,
      async () => {
        const info = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(0));
        return info.num_ack_pending === unsettled && info.ack_floor.stream_seq >= 1 === e0Committed;
      },
      { timeoutMs: 10_000 },
    );
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect(victim).toEqual(expect.arrayContaining(['y0', 'y1']));

    // Newer events, published after the death, are available to the next owner at once.
    for (const id of ['e4', 'e5']) await publisher.publish(event('ix', id));
    await publisher.publish(event('iy', 'y2'));

    const got: Array<{ id: string; at: number }> = [];
    const t0 = Date.now();
    successor = new ShardIngestConsumer({
      js: jetstream(nc),
      jsm,
      names,
      shard: 0,
      log,
      ackWaitMs: ACK_WAIT_MS,
      blobs: noBlobs,
      deadLetters: { record: async () => undefined },
      deliver: eachEvent(async (ev) => void got.push({ id: ev.id, at: Date.now() - t0 })),
    });
    await successor.start();
    const expectedIx = [...(e0Committed ? [] : ['e0']), 'e1', 'e2', 'e3', 'e4', 'e5'];
    await until(
      'the unsettled and newer events delivered to the successor',
      () => got.length >= expectedIx.length + 1,
      {
        timeoutMs: 15_000,
      },
    );

    const ix = got.filter((g) => g.id.startsWith('e')).map((g) => g.id);
    expect(ix).toEqual(expectedIx);
    // Per install, not per shard: iy had nothing unsettled and went on before e1 came back.
    const y2 = got.find((g) => g.id === 'y2');
    const e1 = got.find((g) => g.id === 'e1');
    expect(y2 && e1 && y2.at < e1.at).toBe(true);
  });
});
