/**
 * What a connector plugs into the install actor. Connector code knows its platform and
 * nothing of NATS (ARCHITECTURE.md "Layout"); the install actor calls these with the
 * install's state and an AbortSignal bound to the message deadline.
 */
import type { Logger } from '../log.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import type { ConnectorId } from '../store/installs.js';

export interface DriverContext {
  install: Install;
  signal: AbortSignal;
  log: Logger;
  /**
   * INTERFACE §9.3: the emit's Idempotency-Key, if it had one. Stored on the emitted-event
   * record with the write, so a retry after this node's death finds the write done.
   */
  idempotencyKey?: string;
}

export interface EmitReceipt {
  provider_id: string;
  kind: string;
  install_id: string;
  emitted_at: string;
}

/** Why the self-emit filter dropped an inbound event (spec §6.3): its tier and a reason for the log. */
export interface SelfEmitDrop {
  tier: 1 | 2;
  reason: string;
}

export interface EffectSpec {
  kind: string;
  serialKey: string;
}

/** One install's events in an ingest transaction that may hold several installs' (group commit). */
export interface IngestBatch {
  ctx: DriverContext;
  events: readonly IngestEvent[];
}

export interface HealthReport {
  status: string;
  [k: string]: unknown;
}

export interface ConnectorDriver {
  id: ConnectorId;
  /** Validate (zod, `BadConfig` on refusal) and perform one outbound write. */
  emit(ctx: DriverContext, kind: string, body: Record<string, unknown>): Promise<{ provider_id: string }>;
  health(ctx: DriverContext): Promise<HealthReport>;
  /** Upstream part of an uninstall (e.g. `auth.revoke`); the local transaction follows in `uninstallLocally`. */
  revokeUpstream?(ctx: DriverContext): Promise<void>;
  /** Extra local steps inside the uninstall transaction (e.g. releasing a workspace claim). */
  uninstallLocally?(tx: Queryable, ctx: DriverContext): Promise<void>;
  /**
   * The self-emit filters for the events of one or more of this connector's installs in an
   * ingest transaction (group commit: one lookup for all), one verdict per event in order,
   * per batch: null keeps the event, a `SelfEmitDrop` drops it (it is then not stored); the
   * drop is atomic with the transaction, and the install actor counts it once that
   * committed (INTERFACE §8.20).
   */
  selfEmitFilter?(tx: Queryable, batches: readonly IngestBatch[]): Promise<Array<Array<SelfEmitDrop | null>>>;
  /**
   * INTERFACE §10.5, before the kept events are stored: each batch's events as they may be
   * stored, an event the platform asked to forget (a tombstone) without its content.
   */
  withoutForgotten?(tx: Queryable, batches: readonly IngestBatch[]): Promise<IngestEvent[][]>;
  /**
   * INTERFACE §10.5, once the newly stored events are projected, in the same transaction:
   * what their deletions ask to forget, gone from every stored copy, with a tombstone so a
   * late copy stays forgotten. Returns how many stored rows changed.
   */
  forget?(tx: Queryable, batches: readonly IngestBatch[]): Promise<number>;
  /**
   * The durable side effects a kept inbound event triggers (PR summary comment, slash
   * reply, index sync; INTERFACE §9.4). Pure: called inside the ingest transaction, which
   * stores one effect row per entry next to the event. Entries of one install sharing a
   * `serialKey` run one at a time, in ingest order.
   */
  effectsOf?(install: Install, event: IngestEvent): EffectSpec[];
  /**
   * Runs one effect, on the effect runner's own schedule (never on the ingest path). A
   * throw is retried with capped backoff; an attempt after the first may find its work
   * already done (`firstAttempt: false`), so effects must be idempotent.
   */
  runEffect?(ctx: DriverContext, effect: { kind: string; event: IngestEvent; firstAttempt: boolean }): Promise<void>;
  /**
   * A notice after a newly stored event committed, for work that may be lost and redone at
   * the next mention (INTERFACE §9.5 name lookups). It must return at once and wait on
   * nothing upstream; what must happen belongs in `effectsOf`.
   */
  afterStored?(ctx: DriverContext, event: IngestEvent): void;
}

export type DriverRegistry = ReadonlyMap<ConnectorId, ConnectorDriver>;
