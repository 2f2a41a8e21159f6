/**
 * The install actor's protocol (ARCHITECTURE.md "Actors"): a contract file, so the edge,
 * the wiring and other actors ask it by key without importing the actor itself. The
 * runtime's ingest consumer sends `ingest` through `runtime/names.ts`'s untyped key.
 */
import type { EmitReceipt, HealthReport } from '../connectors/driver.js';
import { installKey as routeKey, installWritesKey as writesRouteKey } from '../runtime/names.js';
import type { IngestEvent, KeyOf } from '../runtime/ports.js';
import type { AuditStamp } from '../store/audit-log.js';

/** What `health` answers: the install's coordinates, then the connector's report (or just its status). */
type InstallHealth = { install_id: string; connector_id: string } & Partial<HealthReport>;

export type InstallProtocol = {
  /**
   * Inbound events of this install, in order, committed together (ARCHITECTURE.md "Inbound" 2,
   * group commit). `stored[i]`: whether `events[i]` was new and kept. `alone`: in a
   * transaction of their own, not shared with other installs' events (an event that failed
   * before must not take others' down with it again).
   */
  ingest: { msg: { events: IngestEvent[]; alone?: boolean }; answer: { stored: boolean[] } };
  /**
   * spec §3.1: idempotent from the caller's side. `audit`: the caller's entry (INTERFACE
   * §10.5), written in the transaction that uninstalls (none when it already was).
   */
  uninstall: { msg: { tenantId: string; audit?: AuditStamp }; answer: { install_id: string; status: 'uninstalled' } };
  /** Another path changed the row: reload it. */
  refresh: { msg: object; answer: { ok: true } };
};

export function installKey(installId: string): KeyOf<InstallProtocol> {
  return routeKey(installId);
}

/**
 * The install's write actor (install-writes.ts): emits and health apart from the ingest
 * mailbox, so neither waits for the other (ARCHITECTURE "Actors").
 */
export type InstallWritesProtocol = {
  /**
   * spec §4.1, §4.2; `tenantId` is the caller's, checked by the edge before it asks, and
   * again by the actor against its own row (INTERFACE §9.4: another tenant's, 404).
   */
  /**
   * `idempotencyKey`: the request's Idempotency-Key (INTERFACE §9.3), the receipt is stored
   * under it. `audit`: the caller's entry (INTERFACE §10.5), written with the receipt.
   */
  emit: {
    msg: {
      tenantId: string;
      kind: string;
      body: Record<string, unknown>;
      idempotencyKey?: string;
      audit?: AuditStamp;
    };
    answer: EmitReceipt;
  };
  health: { msg: { tenantId: string }; answer: InstallHealth };
};

export function installWritesKey(installId: string): KeyOf<InstallWritesProtocol> {
  return writesRouteKey(installId);
}
