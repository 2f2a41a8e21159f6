/**
 * The install actor (ARCHITECTURE.md "Actors"): key `install/{install_id}`, the single
 * writer of one install's lifecycle. It ingests the install's inbound events in order and
 * uninstalls. Emits and health run in the install's write actor (install-writes.ts), so
 * ingest never waits behind a write nor a write behind a backlog of ingest. What an event
 * triggers upstream is stored as durable effects in the ingest transaction and run by the
 * effect runner (INTERFACE §9.4). State that must survive a move lives in Postgres; the
 * activation only caches the install row.
 */
import { Conflict, ErrorCodes } from '../errors.js';
import type { DriverContext, DriverRegistry, SelfEmitDrop } from '../connectors/driver.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { ActorContext, ActorDefinition } from '../runtime/kernel.js';
import { withTx, type Queryable } from '../store/db.js';
import { revokeCredentials } from '../store/credentials.js';
import { insertEffects } from '../store/effects.js';
import { insertEvent } from '../store/events.js';
import { getInstallById, setInstallStatus, type Install } from '../store/installs.js';
import type pg from 'pg';
import type { GraphChange } from '../graph/change.js';
import type { Logger } from '../log.js';
import type { InstallProtocol } from './install-protocol.js';

export interface InstallState {
  install: Install | null;
}

export interface InstallPorts {
  pool: pg.Pool;
  drivers: DriverRegistry;
  /** Graph projection inside the ingest transaction (INTERFACE §5); returns what changed. Warns on `log`. */
  project?(tx: Queryable, install: Install, event: IngestEvent, log: Logger): Promise<GraphChange[]>;
  /** After the ingest transaction committed (graph change feed). */
  onCommitted?(install: Install, changes: GraphChange[]): void;
  /** After a transaction that dropped a self-emitted event committed (INTERFACE §8.20: counted in metrics). */
  onDropped?(install: Install, drop: SelfEmitDrop): void;
  /** The shard of the install's key: its owner runs the install's effects. */
  shardOf(installId: string): number;
  /** After a transaction that stored effects committed: the local runner may start them at once. */
  onEffects?(): void;
}

export function installActor(ports: InstallPorts): ActorDefinition<InstallState, InstallProtocol> {
  const present = (ctx: ActorContext<InstallState>): Install => {
    // The edge checked tenancy before asking; a vanished row is a 404 race, not a crash.
    if (!ctx.state.install) throw new Conflict('install does not exist', { code: ErrorCodes.installNotActive });
    return ctx.state.install;
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
      /** One inbound event: filters, event row and projection in one transaction (ARCHITECTURE "Inbound" 2). */
      async ingest(ctx, msg) {
        const install = ctx.state.install;
        if (!install) {
          ctx.log.warn({ eventId: msg.event.id }, 'event for an install that does not exist; dropped');
          return { stored: false };
        }
        if (install.status !== 'active') {
          // An uninstalled source no longer syncs (spec §3.1): what was still in flight when
          // it was uninstalled (a backfill page, a late webhook, an edge that has not heard
          // of an uninstall made elsewhere yet) is not stored or projected.
          ctx.log.info(
            { eventId: msg.event.id, kind: msg.event.kind, status: install.status },
            'event for an install that is not active; dropped',
          );
          return { stored: false };
        }
        const driver = ports.drivers.get(install.connector_id);
        const changes: GraphChange[] = [];
        let effects = 0;
        const { stored, dropped } = await withTx(
          ports.pool,
          async (tx: Queryable): Promise<{ stored: boolean; dropped: SelfEmitDrop | null }> => {
            changes.length = 0; // withTx may retry the whole transaction
            effects = 0;
            const drop = (await driver?.ingest?.(tx, driverCtx(ctx, install), msg.event)) ?? null;
            if (drop !== null) return { stored: false, dropped: drop };
            const ev = msg.event;
            const inserted = await insertEvent(tx, {
              id: ev.id,
              kind: ev.kind,
              connector_id: ev.connectorId,
              install_id: ev.installId,
              tenant_id: ev.tenantId,
              occurred_at: ev.occurredAt,
              payload: ev.payload,
            });
            // The event row, its projection and its effects commit together, so a replay
            // (inserted=false) finds all three done.
            if (inserted && ports.project) changes.push(...(await ports.project(tx, install, ev, ctx.log)));
            if (inserted) {
              const specs = driver?.effectsOf?.(install, ev) ?? [];
              await insertEffects(
                tx,
                specs.map((e) => ({
                  installId: install.install_id,
                  tenantId: install.tenant_id,
                  connectorId: install.connector_id,
                  shard: ports.shardOf(install.install_id),
                  eventId: ev.id,
                  kind: e.kind,
                  serialKey: e.serialKey,
                })),
              );
              effects = specs.length;
            }
            return { stored: inserted, dropped: null };
          },
        );
        if (changes.length > 0) ports.onCommitted?.(install, changes);
        // Counted only now: a rolled-back or retried transaction dropped nothing yet.
        if (dropped !== null) ports.onDropped?.(install, dropped);
        if (effects > 0) ports.onEffects?.();
        return { stored };
      },

      /** spec §3.1: upstream revoke first, then every local step in one transaction. */
      async uninstall(ctx) {
        const install = present(ctx);
        if (install.status === 'uninstalled') return { install_id: install.install_id, status: 'uninstalled' };
        const driver = ports.drivers.get(install.connector_id);
        const dctx = driverCtx(ctx, install);
        await driver?.revokeUpstream?.(dctx);
        await withTx(ports.pool, async (tx) => {
          await setInstallStatus(tx, install.install_id, 'uninstalled');
          await revokeCredentials(tx, install.install_id);
          await driver?.uninstallLocally?.(tx, dctx);
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
