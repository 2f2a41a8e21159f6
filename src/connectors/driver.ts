/**
 * What a connector plugs into the install actor. Connector code knows its platform and
 * nothing of NATS (ARCHITECTURE.md "Layout"); the install actor calls these with the
 * install's state and an AbortSignal bound to the message deadline.
 */
import type { Logger } from '../log.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { Queryable } from '../store/db.js';
import type { Install } from '../store/installs.js';
import type { ConnectorId } from './catalog.js';

export interface DriverContext {
  install: Install;
  signal: AbortSignal;
  log: Logger;
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
   * The self-emit filters, inside the ingest transaction: null keeps the event, a
   * `SelfEmitDrop` drops it (it is then not stored); the drop is atomic with the
   * transaction, and the install actor counts it once that committed (INTERFACE §8.20).
   */
  ingest?(tx: Queryable, ctx: DriverContext, event: IngestEvent): Promise<SelfEmitDrop | null>;
  /**
   * Side effects of an inbound event (PR summary comment, slash-command reply), run by the
   * install actor after the ingest transaction committed — also for a redelivered event
   * (`inserted: false`), so it must be idempotent. A throw naks the message: it is retried.
   */
  afterCommit?(ctx: DriverContext, event: IngestEvent, info: { inserted: boolean }): Promise<void>;
}

export type DriverRegistry = ReadonlyMap<ConnectorId, ConnectorDriver>;
