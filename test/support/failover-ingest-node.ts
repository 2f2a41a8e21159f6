/**
 * A shard ingest consumer alone in its own OS process, for the kill -9 ordering test
 * (test/integration/failover-ingest-order.test.ts). It delivers events of shard 0 and
 * hangs forever on the event whose id is FO_HANG_ON, like a node killed mid-commit.
 * Prints one JSON line per event on stdout: `ready`, `delivered`, `hanging`.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '../../src/log.js';
import { ShardIngestConsumer } from '../../src/ingest/consumer.js';
import { names } from '../../src/runtime/names.js';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`failover-ingest-node: ${name} is required`);
  return v;
}

const emit = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};

const hangOn = need('FO_HANG_ON');
const nc = await connect({ servers: need('FO_NATS_URL') });
const consumer = new ShardIngestConsumer({
  js: jetstream(nc),
  jsm: await jetstreamManager(nc),
  names: names(need('FO_NAMESPACE')),
  shard: 0,
  log: createLogger({ level: 'silent', node: 'victim' }, process.stderr),
  ackWaitMs: Number(need('FO_ACK_WAIT_MS')),
  blobs: {
    put: () => Promise.reject(new Error('no blobs here')),
    get: async () => null,
    delete: async () => undefined,
  },
  deadLetters: { record: () => Promise.reject(new Error('no dead letters here')) },
  // A batch commits all or nothing: one holding the hanging event commits none of its events.
  deliver: async (events) => {
    const hung = events.find((ev) => ev.id === hangOn);
    if (hung) {
      emit({ type: 'hanging', installId: hung.installId, id: hung.id });
      return new Promise<void>(() => undefined);
    }
    for (const ev of events) emit({ type: 'delivered', installId: ev.installId, id: ev.id });
  },
});
await consumer.start();
emit({ type: 'ready', pid: process.pid });
