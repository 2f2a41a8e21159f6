/**
 * The install's write actor: key `install-writes/{install_id}`, on the same shard logic
 * as every key. Emits and health round trips run here, apart from the install actor's
 * ingest mailbox, so a chat emit waiting up to 10 s for the workspace budget or a slow
 * upstream write never holds the install's ingest, and a backlog of ingest never holds a
 * write (ARCHITECTURE "Actors"). It caches nothing: each message reads the install row, so
 * an uninstall or suspend made anywhere is seen by the next emit.
 */
import { BadConfig, Conflict, ErrorCodes, NotConfigured, NotFound } from '../errors.js';
import type { ConnectorDriver, DriverRegistry, EmitReceipt } from '../connectors/driver.js';
import type { ActorContext, ActorDefinition } from '../runtime/actor-definition.js';
import type { InstallWritesProtocol } from './install-protocol.js';
import { recordAuditOk } from '../store/audit-log.js';
import { withTx } from '../store/db.js';
import { completeIdempotencyKey } from '../store/idempotency-keys.js';
import { getInstallById, type Install } from '../store/installs.js';
import type pg from 'pg';

/** Keys come from `installWritesKey` (install-protocol.ts). */
const INSTALL_WRITES_KIND = 'install-writes';

export interface InstallWritesPorts {
  pool: pg.Pool;
  drivers: DriverRegistry;
  /** INTERFACE §9.4: a request naming another tenant than the install's row was refused. */
  onRefused?(path: 'install_request'): void;
  /** INTERFACE §10.5: an emit was done and its audit entry could not be written, twice. */
  onAuditLost?(action: 'emit'): void;
}

export function installWritesActor(
  ports: InstallWritesPorts,
): ActorDefinition<Record<string, never>, InstallWritesProtocol> {
  const driverOf = (install: Install): ConnectorDriver => {
    const d = ports.drivers.get(install.connector_id);
    if (!d) throw new NotConfigured(`connector ${install.connector_id} is not enabled on this deployment`);
    return d;
  };
  /**
   * INTERFACE §9.4: the actor acts only for its own tenant. The edge names the tenant it
   * authenticated in every request; one naming another tenant (or none) is refused as the
   * edge refuses another tenant's install id: 404, counted.
   */
  const load = async (ctx: ActorContext<Record<string, never>>, msg: { tenantId?: unknown }): Promise<Install> => {
    const install = await getInstallById(ports.pool, ctx.key.id[0]!);
    // The edge checked tenancy before asking; a vanished row is a 404 race, not a crash.
    if (!install) throw new Conflict('install does not exist', { code: ErrorCodes.installNotActive });
    if (msg.tenantId !== install.tenant_id) {
      ports.onRefused?.('install_request');
      ctx.log.warn({ installId: install.install_id }, 'request naming another tenant refused');
      throw new NotFound('install not found');
    }
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
        const install = await load(ctx, msg);
        if (install.status !== 'active')
          throw new Conflict('install is not active', { code: ErrorCodes.installNotActive });
        // A kind of the other connector is a bad payload, not a missing feature (INTERFACE §3).
        if (!msg.kind.startsWith(`${install.connector_id}.`)) {
          throw new BadConfig(`kind ${JSON.stringify(msg.kind)} is not a ${install.connector_id} emit kind`);
        }
        const key = msg.idempotencyKey;
        const dctx = {
          install,
          signal: ctx.signal,
          log: ctx.log,
          ...(key === undefined ? {} : { idempotencyKey: key }),
        };
        const { provider_id } = await driverOf(install).emit(dctx, msg.kind, msg.body);
        const receipt = {
          provider_id,
          kind: msg.kind,
          install_id: install.install_id,
          emitted_at: new Date().toISOString(),
        };
        // INTERFACE §9.3: stored here, next to the write, not only by the edge that asked: an
        // edge that dies or times out before our answer reaches it no longer lets a retry write
        // again. INTERFACE §10.5: the caller's audit entry commits with the receipt. The write
        // stands whatever happens here: a failure is logged (the emitted record still carries
        // the key), and the entry is tried once more alone rather than lost with the receipt.
        if (key !== undefined || msg.audit) {
          await withTx(ports.pool, async (tx) => {
            if (key !== undefined) await completeIdempotencyKey(tx, install.tenant_id, key, receipt);
            if (msg.audit) await recordAuditOk(tx, install.tenant_id, msg.audit);
          }).catch(async (err: unknown) => {
            ctx.log.error({ err }, 'could not store the receipt of an emit; the write stands');
            if (msg.audit) {
              await recordAuditOk(ports.pool, install.tenant_id, msg.audit).catch((again: unknown) => {
                ports.onAuditLost?.('emit');
                ctx.log.error({ err: again, kind: msg.kind }, 'audit entry of an emit not written; the write stands');
              });
            }
          });
        }
        return receipt;
      },

      async health(ctx, msg) {
        const install = await load(ctx, msg);
        if (install.status !== 'active') {
          return { install_id: install.install_id, connector_id: install.connector_id, status: install.status };
        }
        const report = await driverOf(install).health({ install, signal: ctx.signal, log: ctx.log });
        return { install_id: install.install_id, connector_id: install.connector_id, ...report };
      },
    },
  };
}
