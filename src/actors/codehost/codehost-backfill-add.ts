/**
 * Repos added to the installation join the code-host backfill walk (spec §3.2,
 * `installation_repositories.added`): queued into the cursor under its caps.
 */
import type pg from 'pg';
import type { KvPort } from '../../runtime/ports.js';
import type { ActorContext } from '../../runtime/actor-definition.js';
import {
  finishedCursor,
  queueAddedRepos,
  type BackfillCaps,
  type BackfillCursor,
} from '../../connectors/codehost/backfill/backfill-cursor.js';
import { Internal } from '../../errors.js';
import { getInstallById, setBackfill } from '../../store/installs.js';
import type { WalkerSlot } from '../walker-slot.js';

/**
 * Repos added to the installation (`installation_repositories.added`): their PRs join the
 * walk. A walk under way queues them (its listing may have passed them); a finished walk
 * reopens for them alone; a walk with no committed step lists them anyway; a failed walk
 * stays failed (its reason stays on the record). Replays queue nothing twice.
 */
export function addReposHandler(o: {
  pool: pg.Pool;
  cursors: KvPort;
  key: (installId: string) => string;
  caps: BackfillCaps;
  progress: (c: BackfillCursor) => Record<string, unknown>;
  /** False when another activation committed first. */
  save: (ctx: ActorContext<WalkerSlot<BackfillCursor>>, cursor: BackfillCursor) => Promise<boolean>;
}) {
  return async (
    ctx: ActorContext<WalkerSlot<BackfillCursor>>,
    msg: { repoIds?: unknown },
  ): Promise<Record<string, unknown>> => {
    const installId = ctx.key.id[0]!;
    const install = await getInstallById(o.pool, installId);
    if (!install || install.connector_id !== 'codehost' || install.status !== 'active')
      return { queued: 0, reason: 'install not active' };
    const ids = (Array.isArray(msg.repoIds) ? msg.repoIds : []).filter(
      (id): id is number => Number.isSafeInteger(id) && (id as number) > 0,
    );
    const state = install.backfill.state;
    if (state === 'failed') return { queued: 0, reason: 'the walk failed' };
    const reopen = state === 'complete';
    if (!reopen && ctx.state.cursor === null)
      return { queued: 0, reason: 'no step committed yet; the listing includes them' };
    const { cursor, queued, dropped } = queueAddedRepos(
      reopen ? finishedCursor(install.backfill) : ctx.state.cursor!,
      ids,
      o.caps,
    );
    if (dropped.length > 0)
      ctx.log.warn(
        { dropped: dropped.length },
        'pending-repo queue full; added repos not queued for the PR-diff backfill',
      );
    if (queued.length === 0) return { queued: 0 };
    if (reopen) {
      // The state first: a crash before the cursor is written leaves a running walk with no
      // cursor, which a resume walks from the start (added repos included; ids absorb repeats).
      await setBackfill(o.pool, installId, 'running', o.progress(cursor));
      await o.cursors.delete(o.key(installId));
      ctx.state.cursor = null;
      ctx.state.revision = null;
    }
    // Another activation committed meanwhile (a lease overlap): the caller's redelivery retries on the reloaded cursor.
    if (!(await o.save(ctx, cursor))) throw new Internal('the backfill cursor changed while adding repos; retry');
    await setBackfill(o.pool, installId, 'running', o.progress(cursor));
    if (ctx.state.ticker.dueAt === null) ctx.state.ticker.arm(0);
    return { queued: queued.length };
  };
}
