/**
 * The code-host connector (`codehost`): GitHub App webhooks in, writes back, the PR
 * summary comment, health (issue #5). Built once per node from the runtime's ports; it
 * reaches other actors only through `deps.actors` (connector code knows nothing of NATS).
 *
 * Routes are mounted whatever the settings, because their gates answer for a disabled
 * connector too (404/500/401/501 on the admin install, 501 on the webhook route). The
 * write actor is registered on every node, so a shard that lands here can serve it.
 */
import type { FastifyPluginAsync } from 'fastify';
import { codehostWriterActor, codehostWriterKey } from '../../actors/codehost-writer.js';
import type { EdgeContext } from '../../edge/app.js';
import { NotConfigured } from '../../errors.js';
import type { ModuleFactory } from '../module.js';
import { abortable } from './abortable.js';
import { adminInstallRoutes } from './admin-install-route.js';
import { attachWalkers } from './backfill/attach-walkers.js';
import { BoundInstallsCache } from './bound-installs-cache.js';
import { codehostDriver } from './driver.js';
import type { CodehostWrite } from './emit-schema.js';
import { boundInstallsFinder } from './find-bound-installs.js';
import { createGithubClients, type InstallRef } from './github-client.js';
import { performWrite, type WriteOutcome } from './perform-write.js';
import { webhookRoutes } from './webhook-route.js';
import { attachReconciler } from '../../wiring/codehost-reconciler.js';

/**
 * Inside the emit route's 25 s (edge → install actor): up to 10 s for a write slot, the
 * upstream call, and room for the install actor to answer with the write actor's error.
 */
const WRITE_ASK_TIMEOUT_MS = 22_000;

export const codehostModule: ModuleFactory = (deps) => {
  const { config, pool, cipher } = deps;
  const log = deps.log.child({ connector: 'codehost' });
  const appId = config.codehost.appId;
  const clients = config.codehost.enabled ? createGithubClients({ config, log, pool, cipher }) : null;

  const writer = codehostWriterActor({
    // A primary-limit hold can last until the hourly reset: keep it where nothing expires
    // (the dedup bucket forgets after 10 minutes), so a shard move never forgets it.
    holds: deps.cursors,
    write: (install, w, signal, actorLog) => {
      if (clients === null) throw new NotConfigured('the code-host connector is not enabled and fully configured');
      return performWrite(clients.forInstall(install), pool, install, w, signal, actorLog);
    },
  });

  const write = (install: InstallRef, w: CodehostWrite, signal: AbortSignal) =>
    abortable(
      deps.actors.ask<WriteOutcome>(
        codehostWriterKey(install.githubInstallationId),
        { type: 'write', install: { ...install }, write: { ...w } },
        { timeoutMs: WRITE_ASK_TIMEOUT_MS },
      ),
      signal,
    );

  const base = codehostDriver({
    clients,
    write,
    summary: clients !== null && appId !== null ? { pool, clients, appId, dedup: deps.dedup, write } : null,
  });
  // Issue #6: backfill walker, rate gate, indexer sessions; slash commands and index syncs after commit.
  const walkers = attachWalkers({ deps, clients, write });
  const reconciler = attachReconciler(deps, clients);
  const driver = {
    ...base,
    async afterCommit(...args: Parameters<NonNullable<typeof base.afterCommit>>) {
      await base.afterCommit?.(...args);
      await walkers.afterCommit(...args);
    },
  };

  // The webhook fan-out lists; the admin install forgets them before it answers 201.
  const installs = new BoundInstallsCache({ find: boundInstallsFinder(pool) });
  const routes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
    await app.register(
      adminInstallRoutes({
        config,
        log,
        pool,
        cipher,
        clients,
        startBackfill: walkers.startBackfill,
        installsChanged: () => installs.invalidate(),
      }),
      ctx,
    );
    await app.register(webhookRoutes({ config, log, pool, publish: deps.publish, installs }), ctx);
  };

  return {
    id: 'codehost',
    driver,
    actors: [writer, ...walkers.actors, ...reconciler.actors],
    routes,
    async onShardAcquired(shard) {
      await walkers.onShardAcquired(shard);
      await reconciler.onShardAcquired(shard);
    },
  };
};
