/**
 * `installation` `deleted` webhooks (INTERFACE §3): the installation is gone upstream,
 * so its installs become `uninstalled` here without calling GitHub:
 * status and credentials change in one transaction per install, then each install actor
 * reloads its row so it refuses emits at once.
 */
import type pg from 'pg';
import type { ActorAsk } from '../../../runtime/ports.js';
import type { Logger } from '../../../log.js';
import { installKey } from '../../../actors/install-protocol.js';
import { revokeCredentials } from '../../../store/credentials.js';
import { withTx } from '../../../store/db.js';
import { setInstallStatus, type Install } from '../../../store/installs.js';

const REFRESH_TIMEOUT_MS = 5_000;

export async function uninstallLocally(
  pool: pg.Pool,
  actors: ActorAsk,
  installs: ReadonlyArray<Pick<Install, 'install_id' | 'tenant_id'>>,
  log: Logger,
): Promise<void> {
  for (const install of installs) {
    await withTx(pool, async (tx) => {
      await setInstallStatus(tx, install.install_id, 'uninstalled');
      await revokeCredentials(tx, install.install_id);
    });
    log.info(
      { installId: install.install_id, tenantId: install.tenant_id },
      'GitHub installation deleted; install uninstalled',
    );
  }
  await Promise.all(
    installs.map((install) =>
      actors
        .ask(installKey(install.install_id), { type: 'refresh' }, { timeoutMs: REFRESH_TIMEOUT_MS })
        .catch((err: unknown) => {
          // The row is committed; an actor that missed the refresh reloads on its next activation.
          log.warn({ err, installId: install.install_id }, 'install actor not refreshed after uninstall');
        }),
    ),
  );
}
