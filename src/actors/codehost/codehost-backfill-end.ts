/**
 * How a code-host backfill walk ends (spec §3.2, §3.1): finished (`complete`, or `failed`
 * with its reason), or abandoned because its install was uninstalled. The install's record
 * is written before the cursor is deleted, so a crash in between leaves a finished walk,
 * never a restarted one.
 */
import type pg from 'pg';
import type { KvPort } from '../../runtime/ports.js';
import type { Logger } from '../../log.js';
import type { BackfillCursor } from '../../connectors/codehost/backfill/backfill-cursor.js';
import { setBackfill, type Install } from '../../store/installs.js';
import type { WalkerSlot } from '../walker-slot.js';

/** The `reason` of a walk its install's uninstall ended. */
const UNINSTALLED = 'install uninstalled';

interface WalkContext {
  state: WalkerSlot<BackfillCursor>;
  log: Logger;
}

export function walkEnd(o: {
  pool: pg.Pool;
  cursors: KvPort;
  key: (installId: string) => string;
  progress: (c: BackfillCursor, extra?: Record<string, unknown>) => Record<string, unknown>;
}) {
  const forget = (ctx: WalkContext) => {
    ctx.state.cursor = null;
    ctx.state.revision = null;
  };
  return {
    async finish(ctx: WalkContext, install: Install, cursor: BackfillCursor, failure: string | null): Promise<void> {
      ctx.state.ticker.cancel();
      await setBackfill(
        o.pool,
        install.install_id,
        failure === null ? 'complete' : 'failed',
        o.progress(cursor, failure === null ? {} : { reason: failure }),
      );
      await o.cursors
        .delete(o.key(install.install_id))
        .catch((err: unknown) => ctx.log.warn({ err }, 'finished backfill cursor not deleted'));
      forget(ctx);
      ctx.log[failure === null ? 'info' : 'warn'](
        { installId: install.install_id, ...cursor.counts, reason: failure ?? undefined },
        `code-host backfill ${failure === null ? 'complete' : 'failed'}`,
      );
    },

    /**
     * An uninstall is final (a reinstall is a new install; resumes skip it): an unfinished
     * walk ends `failed`, not `running` for ever.
     */
    async abandon(ctx: WalkContext, install: Install): Promise<void> {
      if (install.backfill.state === 'pending' || install.backfill.state === 'running') {
        const { state: _state, updated_at: _at, ...recorded } = install.backfill;
        await setBackfill(
          o.pool,
          install.install_id,
          'failed',
          ctx.state.cursor
            ? o.progress(ctx.state.cursor, { reason: UNINSTALLED })
            : { ...recorded, reason: UNINSTALLED },
        );
        ctx.log.info({ installId: install.install_id }, 'code-host backfill stopped: the install was uninstalled');
      }
      if (ctx.state.revision !== null) await o.cursors.delete(o.key(install.install_id));
      forget(ctx);
    },
  };
}
