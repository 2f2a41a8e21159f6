/**
 * `installation` `suspend` / `unsuspend` webhooks (INTERFACE §9.4): the installation is
 * frozen upstream, not gone. Its installs become `suspended` (ingest stops, emits answer
 * 409 `install_not_active`, health reports the status) and keep their credentials and
 * rows; `unsuspend` makes the same installs `active` again, with no new backfill. Each
 * install actor reloads its row afterwards (it caches it). Each change is conditional on the
 * status the webhook found, in the same statement, so it cannot race another status change.
 */
import type pg from 'pg';
import type { ActorAsk } from '../../../runtime/ports.js';
import type { Logger } from '../../../log.js';
import { installKey } from '../../../actors/install-protocol.js';
import { Conflict, ErrorCodes } from '../../../errors.js';
import { setInstallStatus, type Install } from '../../../store/installs.js';

const REFRESH_TIMEOUT_MS = 5_000;

export async function setSuspended(
  pool: pg.Pool,
  actors: ActorAsk,
  installs: ReadonlyArray<Pick<Install, 'install_id' | 'tenant_id'>>,
  suspended: boolean,
  log: Logger,
): Promise<void> {
  const changed: Array<Pick<Install, 'install_id' | 'tenant_id'>> = [];
  for (const install of installs) {
    // Only from the status the webhook found: an install uninstalled since (a tenant's DELETE,
    // `installation.deleted` on another node) stays uninstalled, whatever this webhook read.
    const from = suspended ? 'active' : 'suspended';
    const row = await setInstallStatus(pool, install.install_id, suspended ? 'suspended' : 'active', { from }).catch(
      (err: unknown) => {
        if (!(err instanceof Conflict && err.code === ErrorCodes.alreadyInstalled)) throw err;
        // The tenant installed the installation again while this install was suspended: the new one serves.
        log.warn({ installId: install.install_id }, 'not unsuspended: the tenant has another active install of it');
        return null;
      },
    );
    if (row === null) {
      log.info(
        { installId: install.install_id, tenantId: install.tenant_id, expected: from },
        'install no longer in the status the webhook found; left as it is',
      );
      continue;
    }
    changed.push(install);
    log.info(
      { installId: install.install_id, tenantId: install.tenant_id },
      suspended
        ? 'GitHub installation suspended; install suspended'
        : 'GitHub installation unsuspended; install active',
    );
  }
  await Promise.all(
    changed.map((install) =>
      actors
        .ask(installKey(install.install_id), { type: 'refresh' }, { timeoutMs: REFRESH_TIMEOUT_MS, idempotent: true })
        .catch((err: unknown) => {
          // The row is committed; an actor that missed the refresh reloads on its next activation.
          log.warn({ err, installId: install.install_id }, 'install actor not refreshed after a status change');
        }),
    ),
  );
}
