/**
 * The install actor (ARCHITECTURE.md "Actors"): key `install/{install_id}`, the single
 * writer of one install's lifecycle. It ingests the install's inbound events in order and
 * uninstalls. Emits and health run in the install's write actor (install-writes.ts), so
 * ingest never waits behind a write nor a write behind a backlog of ingest. What an event
 * triggers upstream is stored as durable effects in the ingest transaction and run by the
 * effect runner (INTERFACE §9.4). State that must survive a move lives in Postgres; the
 * activation only caches the install row.
 */
import { Conflict, ErrorCodes, NotFound } from '../errors.js';
import type { DriverContext, DriverRegistry, SelfEmitDrop } from '../connectors/driver.js';
import type { ActorContext, ActorDefinition } from '../runtime/actor-definition.js';
import { recordAuditOk } from '../store/audit-log.js';
import { withTx } from '../store/db.js';
import { revokeCredentials } from '../store/credentials.js';
import { getInstallById, setInstallStatus, type Install } from '../store/installs.js';
import type pg from 'pg';
import type { GraphChange } from '../graph/change.js';
import type { IngestPart, PartOutcome } from '../ingest/transaction.js';
import type { InstallProtocol } from './install-protocol.js';

export interface InstallState {
  install: Install | null;
}

export interface InstallPorts {
  pool: pg.Pool;
  drivers: DriverRegistry;
  /**
   * Commits the install's ready events in an ingest transaction, alone or with other
   * installs' (ingest/commit.ts); resolves once that committed.
   */
  commit(part: IngestPart, opts: { alone?: boolean }): Promise<PartOutcome>;
  /** After the ingest transaction committed (graph change notices; `feedSeq`: the tenant's feed head). */
  onCommitted?(install: Install, changes: GraphChange[], feedSeq: number | null): void;
  /** After a transaction that dropped a self-emitted event committed (INTERFACE §8.20: counted in metrics). */
  onDropped?(install: Install, drop: SelfEmitDrop): void;
  /** After a transaction that stored effects committed: the local runner may start them at once. */
  onEffects?(): void;
  /** INTERFACE §9.4: a message naming another tenant or install than the row's was refused. */
  onRefused?(path: 'install_ingest' | 'install_request'): void;
}

export function installActor(ports: InstallPorts): ActorDefinition<InstallState, InstallProtocol> {
  const present = (ctx: ActorContext<InstallState>): Install => {
    // The edge checked tenancy before asking; a vanished row is a 404 race, not a crash.
    if (!ctx.state.install) throw new Conflict('install does not exist', { code: ErrorCodes.installNotActive });
    return ctx.state.install;
  };
  /**
   * INTERFACE §9.4: the actor acts only for its own tenant. The edge names the tenant it
   * authenticated in every request; one naming another tenant (or none) is refused as the
   * edge refuses another tenant's install id: 404, counted.
   */
  const owned = (ctx: ActorContext<InstallState>, msg: { tenantId?: unknown }): Install => {
    const install = present(ctx);
    if (msg.tenantId !== install.tenant_id) {
      ports.onRefused?.('install_request');
      ctx.log.warn({ installId: install.install_id }, 'request naming another tenant refused');
      throw new NotFound('install not found');
    }
    return install;
  };
  const driverCtx = (ctx: ActorContext<InstallState>, install: Install): DriverContext => ({
    install,
    signal: ctx.signal,
    log: ctx.log,
  });

  return {
    kind: 'install',
    idleMs: 5 * 60_000,
    async hydrate(key) {
      return { install: await getInstallById(ports.pool, key.id[0]!) };
    },
    handlers: {
      /**
       * Inbound events, in order: filters, event rows, projection and effects in one
       * transaction, shared with other installs' when they are ready too (ARCHITECTURE
       * "Inbound" 2). The actor awaits it, so its next message waits for the commit.
       */
      async ingest(ctx, msg) {
        const install = ctx.state.install;
        const events = msg.events;
        if (!install) {
          ctx.log.warn({ events: events.length }, 'events for an install that does not exist; dropped');
          return { stored: events.map(() => false) };
        }
        if (install.status !== 'active') {
          // An uninstalled source no longer syncs (spec §3.1): what was still in flight when
          // it was uninstalled (a backfill page, a late webhook, an edge that has not heard
          // of an uninstall made elsewhere yet) is not stored or projected.
          ctx.log.info(
            { events: events.length, kinds: [...new Set(events.map((e) => e.kind))], status: install.status },
            'events for an install that is not active; dropped',
          );
          return { stored: events.map(() => false) };
        }
        // INTERFACE §9.4: only events of this very install and tenant are stored here.
        const own = events.map((e) => e.tenantId === install.tenant_id && e.installId === install.install_id);
        for (const [i, e] of events.entries()) {
          if (own[i]) continue;
          ports.onRefused?.('install_ingest');
          ctx.log.warn({ eventId: e.id }, 'event naming another tenant or install refused');
        }
        const candidates = events.filter((_, i) => own[i]);
        if (candidates.length === 0) return { stored: events.map(() => false) };
        const outcome = await ports.commit(
          { ctx: driverCtx(ctx, install), events: candidates },
          { alone: msg.alone === true },
        );
        if (outcome.changes.length > 0) ports.onCommitted?.(install, outcome.changes, outcome.feedSeq);
        // Counted only now: a rolled-back or retried transaction dropped nothing yet.
        for (const drop of outcome.drops) ports.onDropped?.(install, drop);
        if (outcome.effects > 0) ports.onEffects?.();
        const driver = ports.drivers.get(install.connector_id);
        let next = 0;
        const stored = events.map((_, i) => own[i] === true && outcome.stored[next++] === true);
        for (const [i, e] of events.entries()) if (stored[i]) driver?.afterStored?.(driverCtx(ctx, install), e);
        return { stored };
      },

      /** spec §3.1: upstream revoke first, then every local step in one transaction. */
      async uninstall(ctx, msg) {
        const install = owned(ctx, msg);
        if (install.status === 'uninstalled') return { install_id: install.install_id, status: 'uninstalled' };
        const driver = ports.drivers.get(install.connector_id);
        const dctx = driverCtx(ctx, install);
        await driver?.revokeUpstream?.(dctx);
        await withTx(ports.pool, async (tx) => {
          await setInstallStatus(tx, install.install_id, 'uninstalled');
          await revokeCredentials(tx, install.install_id);
          await driver?.uninstallLocally?.(tx, dctx);
          // INTERFACE §10.5: the caller's entry commits with the uninstall (the revoke upstream is done).
          if (msg.audit) await recordAuditOk(tx, install.tenant_id, msg.audit);
        });
        ctx.state.install = await getInstallById(ports.pool, install.install_id);
        return { install_id: install.install_id, status: 'uninstalled' };
      },

      /** Another path changed the row (e.g. `app_uninstalled` handled elsewhere): reload. */
      async refresh(ctx) {
        ctx.state.install = await getInstallById(ports.pool, ctx.key.id[0]!);
        return { ok: true };
      },
    },
  };
}
