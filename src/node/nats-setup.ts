/**
 * A node's NATS: the connection (INTERFACE §9.2 authentication and TLS), the server
 * version check, the ingest stream, and the opener of its KV buckets (deployment-kv.ts). On
 * a NATS cluster that is still electing its leaders, each JetStream setup request is
 * retried for a while (js-admin-retry.ts).
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { ensureIngestStream } from '../ingest/stream.js';
import { retryJsAdmin } from '../runtime/js-admin-retry.js';
import { deploymentKvOpener, type KvOpener } from '../runtime/deployment-kv.js';
import type { Names } from '../runtime/names.js';
import { checkServerVersion } from '../runtime/nats.js';
import { connectNats } from '../runtime/nats-connect.js';
import type { Undo } from './undo.js';

export interface NodeNats {
  nc: NatsConnection;
  jsm: JetStreamManager;
  js: JetStreamClient;
  /** Opens (or creates) one of the deployment's KV buckets. */
  bucket: KvOpener;
}

export async function openNodeNats(config: Readonly<Config>, n: Names, log: Logger, undo: Undo): Promise<NodeNats> {
  const nc = await connectNats({ servers: config.natsServers, name: config.nodeId, log, auth: config.nats });
  undo.push({ name: 'nats', fn: () => nc.close(), stop: () => nc.drain() });
  await checkServerVersion(nc);
  const jsm = await jetstreamManager(nc);
  await retryJsAdmin(
    `stream ${n.ingestStream}`,
    () => ensureIngestStream(jsm, n, { replicas: config.nats.replicas, maxBytes: config.nats.ingestMaxBytes }),
    log,
  );
  return { nc, jsm, js: jetstream(nc), bucket: deploymentKvOpener(nc, n, config.nats.replicas, log) };
}
