/**
 * The install's write actor: key `install-writes/{install_id}`, on the same shard logic
 * as every key. Emits and health round trips run here, apart from the install actor's
 * ingest mailbox, so a chat emit waiting up to 10 s for the workspace budget or a slow
 * upstream write never holds the install's ingest, and a backlog of ingest never holds a
 * write (ARCHITECTURE "Actors"). It caches nothing: each message reads the install row, so
 * an uninstall or suspend made anywhere is seen by the next emit.
 */
import { BadConfig, Conflict, ErrorCodes, NotConfigured } from '../errors.js';
import type { ConnectorDriver, DriverRegistry, EmitReceipt } from '../connectors/driver.js';
import type { ActorContext, ActorDefinition } from '../runtime/kernel.js';
import type { InstallWritesProtocol } from './install-protocol.js';
import { getInstallById, type Install } from '../store/installs.js';
import type pg from 'pg';

/** Keys come from `installWritesKey` (install-protocol.ts). */
export const INSTALL_WRITES_KIND = 'install-writes';

export interface InstallWritesPorts {
  pool: pg.Pool;
  drivers: DriverRegistry;
}

export function installWritesActor(
  ports: InstallWritesPorts,
): ActorDefinition<Record<string, never>, InstallWritesProtocol> {
  const driverOf = (install: Install): ConnectorDriver => {
    const d = ports.drivers.get(install.connector_id);
    if (!d) throw new NotConfigured(`connector ${install.connector_id} is not enabled on this deployment`);
    return d;
  };
  const load = async (ctx: ActorContext<Record<string, never>>): Promise<Install> => {
    const install = await getInstallById(ports.pool, ctx.key.id[0]!);
    // The edge checked tenancy before asking; a vanished row is a 404 race, not a crash.
    if (!install) throw new Conflict('install does not exist', { code: ErrorCodes.installNotActive });
    return install;
  };

  return {
    kind: INSTALL_WRITES_KIND,
    idleMs: 5 * 60_000,
    async hydrate() {
      return {};
    },
    handlers: {
      async emit(ctx, msg): Promise<EmitReceipt> {
        const install = await load(ctx);
        if (install.status !== 'active')
          throw new Conflict('install is not active', { code: ErrorCodes.installNotActive });
        // A kind of the other connector is a bad payload, not a missing feature (INTERFACE §3).
        if (!msg.kind.startsWith(`${install.connector_id}.`)) {
          throw new BadConfig(`kind ${JSON.stringify(msg.kind)} is not a ${install.connector_id} emit kind`);
        }
        const dctx = { install, signal: ctx.signal, log: ctx.log };
        const { provider_id } = await driverOf(install).emit(dctx, msg.kind, msg.body);
        return { provider_id, kind: msg.kind, install_id: install.install_id, emitted_at: new Date().toISOString() };
      },

      async health(ctx) {
        const install = await load(ctx);
        if (install.status !== 'active') {
          return { install_id: install.install_id, connector_id: install.connector_id, status: install.status };
        }
        const report = await driverOf(install).health({ install, signal: ctx.signal, log: ctx.log });
        return { install_id: install.install_id, connector_id: install.connector_id, ...report };
      },
    },
  };
}
