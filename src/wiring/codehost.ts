/**
 * The code-host connector (`codehost`) wired together: its platform code
 * (`connectors/codehost/`: driver, PR summary, health), its actors (`actors/codehost/`:
 * the write actor here, walkers and indexer sessions in `codehost-walkers.ts`) and its
 * routes (`edge/routes/codehost/`: webhooks, admin install). Built once per node from the
 * runtime's ports; everything reaches other actors only through `deps.actors`.
 *
 * Routes are mounted whatever the settings, because their gates answer for a disabled
 * connector too (404/500/401/501 on the admin install, 501 on the webhook route). The
 * write actor is registered on every node, so a shard that lands here can serve it.
 */
import type { FastifyPluginAsync } from 'fastify';
import { codehostWriterActor } from '../actors/codehost/codehost-writer.js';
import { codehostWriterKey } from '../actors/codehost/codehost-writer-protocol.js';
import type { EdgeContext } from '../edge/context.js';
import { NotConfigured } from '../errors.js';
import type { ConnectorDriver } from '../connectors/driver.js';
import type { ModuleFactory } from './module.js';
import { abortable } from '../connectors/codehost/abortable.js';
import { adminInstallRoutes } from '../edge/routes/codehost/admin-install.js';
import { attachWalkers } from './codehost-walkers.js';
import { BoundInstallsCache } from '../connectors/codehost/bound-installs-cache.js';
import { codehostDriver } from '../connectors/codehost/driver.js';
import type { CodehostWrite } from '../connectors/codehost/emit-schema.js';
import { boundInstallsFinder } from '../connectors/codehost/find-bound-installs.js';
import { createGithubClients, type InstallRef } from '../connectors/codehost/github-client.js';
import { performWrite } from '../connectors/codehost/perform-write.js';
import { webhookRoutes } from '../edge/routes/codehost/webhooks.js';
import { attachReconciler } from './codehost-reconciler.js';

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
    write: (install, w, signal, actorLog, idempotencyKey) => {
      if (clients === null) throw new NotConfigured('the code-host connector is not enabled and fully configured');
      return performWrite(clients.forInstall(install), pool, install, w, { signal, log: actorLog, idempotencyKey });
    },
  });

  const write = (install: InstallRef, w: CodehostWrite, signal: AbortSignal, idempotencyKey?: string) =>
    abortable(
      deps.actors.ask(
        codehostWriterKey(install.githubInstallationId),
        { type: 'write', install: { ...install }, write: { ...w }, idempotencyKey },
        { timeoutMs: WRITE_ASK_TIMEOUT_MS },
      ),
      signal,
    );

  const base = codehostDriver({
    clients,
    write,
    summary: clients !== null && appId !== null ? { pool, clients, appId, dedup: deps.dedup, write } : null,
  });
  // Backfill walker, rate gate, indexer sessions; slash replies and index syncs as effects of events.
  const walkers = attachWalkers({ deps, clients, write });
  const reconciler = attachReconciler(deps, clients);
  const driver: ConnectorDriver = {
    ...base,
    effectsOf: (install, event) => [...(base.effectsOf?.(install, event) ?? []), ...walkers.effectsOf(install, event)],
    async runEffect(ctx, effect) {
      await base.runEffect?.(ctx, effect);
      await walkers.runEffect(ctx, effect);
    },
  };

  // The webhook fan-out lists; the admin install forgets them before it answers 201.
  const installs = new BoundInstallsCache({ find: boundInstallsFinder(deps.requestPool) });
  const routes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
    await app.register(
      adminInstallRoutes({
        config,
        log,
        // INTERFACE §9.3: a request waits at most 2 s for Postgres (then 503), as every route does.
        pool: deps.requestPool,
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
    async resumeShards(shards) {
      await walkers.resumeShards(shards);
      await reconciler.resumeShards(shards);
    },
  };
};
