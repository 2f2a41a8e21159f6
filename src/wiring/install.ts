/**
 * The install actors, on every node: `install` (an install's ingest, reads and emits; it
 * commits through the node's committer and, after a commit, tells the change feed, the
 * dropped-event counter and the effect runner) and `install-writes` (its writes that do
 * not wait on its ingest).
 */
import { installActor } from '../actors/install.js';
import { installWritesActor } from '../actors/install-writes.js';
import type { ServiceModuleFactory } from './module.js';

export const installModule: ServiceModuleFactory = (deps) => {
  const { pool, drivers, committer, feed, effects, runtimeMetrics: m } = deps;
  const onRefused = (path: string) => m.fenceRefused.inc({ path });
  return {
    id: 'install',
    actors: [
      installActor({
        pool,
        drivers,
        commit: (part, o) => committer.commit(part, o),
        onCommitted: feed.publish,
        onDropped: (install, drop) => m.ingestDropped.inc({ connector: install.connector_id, tier: String(drop.tier) }),
        ...(effects ? { onEffects: () => effects.wake() } : {}),
        onRefused,
      }),
      installWritesActor({ pool, drivers, onRefused, onAuditLost: (action) => m.auditLost.inc({ action }) }),
    ],
    routes: null,
  };
};
