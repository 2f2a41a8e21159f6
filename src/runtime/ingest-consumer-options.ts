/**
 * What a shard ingest consumer (ingest-consumer.ts) is given, and the figures it reports.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import type { DeliveryRoom } from './delivery-room.js';
import type { IngestBuffer } from './ingest-buffer.js';
import type { IngestAttemptsPort } from './ingest-attempts.js';
import type { IngestDeliveryMeta } from './ingest-settle.js';
import type { Names } from './names.js';
import type { BlobPort, DeadLetterPort, IngestEvent, StoredEventsPort } from './ports.js';
import type { Seal } from './seal.js';

export interface ShardIngestConsumerOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  shard: number;
  log: Logger;
  blobs: BlobPort;
  deadLetters: DeadLetterPort;
  /**
   * Commit events of one install, in order, all or none. `alone`: events being isolated
   * after their batch failed, to be committed in a transaction of their own.
   */
  deliver: (events: IngestEvent[], meta: IngestDeliveryMeta[], opts?: { alone?: boolean }) => Promise<void>;
  /**
   * Most events in one delivery. Default 512: against 256, the ingest transaction's Postgres
   * CPU per chat event fell 6-7 % and the node's about 20 % (bench/graph/chat-batch.ts), and
   * a one-install drain committed 7 % more, 32 installs 12 % more (docs/performance-log.md).
   */
  maxBatch?: number;
  /**
   * A batch takes no more events once those it holds reach this many bytes (their messages,
   * or their blobs, which run up to 25 MiB each). Default 4 MiB: 512 chat messages are about
   * 1.5 MiB, and a batch of large webhooks decoded at once would hold their whole size (a
   * 30 KB-event drain peaked at 450 MiB with 16 MiB batches, 380 MiB with 4 MiB).
   */
  maxBatchBytes?: number;
  /**
   * Decoded bytes of batches being delivered at once, shared by the node's shards
   * (delivery-room.ts). Default: a room of DEFAULT_DELIVERY_ROOM_BYTES of its own.
   */
  room?: DeliveryRoom;
  /**
   * Events the node holds at once across its shards (ingest-buffer.ts), shared by them.
   * Default: DEFAULT_INGEST_MAX_IN_FLIGHT of its own.
   */
  buffer?: IngestBuffer;
  maxDeliver?: number;
  /** On stop, waits (bounded) until the server has every ack sent: a PING round trip. */
  flush?: (() => Promise<void>) | null;
  /** Attempts across owners (ingest-attempts.ts): shard moves never dead-letter an event. */
  attempts?: IngestAttemptsPort | null;
  /** At takeover, which unsettled events are stored: those hold no lane (ingest-takeover.ts). Null: all block. */
  storedEvents?: StoredEventsPort | null;
  /** Server-side ack wait: how long a dead owner's events stay out (a live one sends +WPI). */
  ackWaitMs?: number;
  /**
   * Events one shard holds at most, enforced by the server: 2 batches' worth (default 1024),
   * so the next batch of a busy install gathers while one commits. The node's `buffer` bounds
   * all its shards together.
   */
  maxAckPending?: number;
  /** First nak delay; doubles per delivery up to 60 s. Default 1000. */
  nakBaseMs?: number;
  /** INTERFACE §9.4: when set, a message without this deployment's seal is refused. */
  seal?: Seal | null;
  /** A refused (unsealed or forged) message, for metrics. */
  onRefused?: (installId: string | null) => void;
}

export type ConsumerStats = { inFlight: number; delivered: number; redeliveries: number; deadLettered: number };
