/**
 * A real JetStream outage on a test node's ingest stream (no mock of NATS): `refuse` makes
 * the stream reject every publish (a 1-byte message size cap: the server answers each with
 * an error); `silence` moves the stream off the ingest subjects and puts a subscriber there
 * that never answers, so a publish waits on an ack that does not come. `restore()` puts the
 * stream back as it was; the durable consumers carry on.
 */
import { jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { names as makeNames } from '../../src/runtime/names.js';
import { testNatsUrl } from './env.js';

export interface IngestOutage {
  restore(): Promise<void>;
}

export async function ingestOutage(namespace: string, how: 'refuse' | 'silence'): Promise<IngestOutage> {
  const n = makeNames(namespace);
  const nc = await connect({ servers: testNatsUrl() });
  const jsm = await jetstreamManager(nc);
  const original: StreamConfig = (await jsm.streams.info(n.ingestStream)).config;
  if (how === 'refuse') {
    await jsm.streams.update(n.ingestStream, { ...original, max_msg_size: 1 });
  } else {
    await jsm.streams.update(n.ingestStream, { ...original, subjects: [`${namespace}.ingest-paused.>`] });
    // Interest on the subject, so a publish is not "no responders" (that fails at once) but unanswered.
    nc.subscribe(n.ingestSubjects);
    await nc.flush();
  }
  return {
    async restore() {
      await jsm.streams.update(n.ingestStream, { ...original });
      await nc.close();
    },
  };
}
