/**
 * The chat-workspace connector (`chatapp`) wired together: its platform code
 * (`connectors/chatapp/`: driver, intake, Socket Mode), its actors (`actors/chatapp/`: the
 * channel and workspace buckets that pace write-back, the backfill walker per install) and
 * its routes (`edge/routes/chatapp/`: OAuth, Events API), joined to the runtime through
 * the module ports (wiring/module.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { chatBackfillActor } from '../actors/chatapp/chat-backfill.js';
import { chatBackfillKey } from '../actors/chatapp/chat-backfill-protocol.js';
import { chatBucketActor } from '../actors/chatapp/chat-bucket.js';
import { chatBucketKey } from '../actors/chatapp/chat-bucket-protocol.js';
import { chatNamesActor } from '../actors/chatapp/chat-names.js';
import { chatNamesKey } from '../actors/chatapp/chat-names-protocol.js';
import { chatWorkspaceBucketActor } from '../actors/chatapp/chat-workspace-bucket.js';
import type { EdgeContext } from '../edge/context.js';
import { installKey } from '../actors/install-protocol.js';
import { findClaimedInstall, listUnfinishedBackfills } from '../store/chat-claims.js';
import type { ModuleFactory } from './module.js';
import { botCredentials } from '../connectors/chatapp/bot-token.js';
import { chatDriver } from '../connectors/chatapp/driver.js';
import type { EmitPermits } from '../connectors/chatapp/emit.js';
import type { IntakeDeps } from '../connectors/chatapp/event-intake.js';
import { ClaimedInstallsCache, hearChatInstallChanges } from '../connectors/chatapp/claimed-installs-cache.js';
import { chatEventsRoute } from '../edge/routes/chatapp/events.js';
import { chatOAuthRoutes } from '../edge/routes/chatapp/oauth.js';
import { chatSocketMode, type SocketModeTransport } from '../connectors/chatapp/socket-mode.js';
import { GapWatch } from '../connectors/chatapp/gap-watch.js';
import { listOpenCatchUps } from '../store/chat-catch-up.js';
import { chatCatchUpMetrics } from './chatapp-metrics.js';
import { resumeAgain } from './resume-again.js';

const BUCKET_ASK_TIMEOUT_MS = 8_000;
const START_BACKFILL_TIMEOUT_MS = 10_000;
const NAMES_ASK_TIMEOUT_MS = 5_000;

export const chatappModule: ModuleFactory = (deps) => {
  const { config, pool, log: rootLog } = deps;
  const log = rootLog.child({ connector: 'chatapp' });
  const credentials = botCredentials({ config, pool, cipher: deps.cipher, log });

  const permits: EmitPermits = {
    // INTERFACE §8.24: with its id a take is safe to resend, so a take caught by its node's
    // death is answered by the next owner instead of hanging until the timeout.
    take: (teamId, channelId, takeId) =>
      deps.actors.ask(
        chatBucketKey(teamId, channelId),
        { type: 'take', takeId },
        { timeoutMs: BUCKET_ASK_TIMEOUT_MS, idempotent: true },
      ),
    refund: async (teamId, channelId, takeId) => {
      await deps.actors.ask(
        chatBucketKey(teamId, channelId),
        { type: 'refund', takeId },
        { timeoutMs: BUCKET_ASK_TIMEOUT_MS, idempotent: true },
      );
    },
    hold: async (teamId, channelId, retryAfterMs) => {
      // A hold keeps the later of two deadlines, so running it twice is harmless.
      await deps.actors.ask(
        chatBucketKey(teamId, channelId),
        { type: 'hold', retryAfterMs },
        { timeoutMs: BUCKET_ASK_TIMEOUT_MS, idempotent: true },
      );
    },
  };
  const startBackfill = async (installId: string) => {
    await deps.actors.ask(
      chatBackfillKey(installId),
      { type: 'resume' },
      { timeoutMs: START_BACKFILL_TIMEOUT_MS, idempotent: true },
    );
  };
  const intake: IntakeDeps = {
    // INTERFACE §9.3: Slack gives 3 s; every Postgres wait of the intake gives up after 2.
    pool: deps.requestPool,
    log,
    publish: (event) => deps.publish(event),
    installs: new ClaimedInstallsCache({ find: (teamId) => findClaimedInstall(deps.requestPool, teamId) }),
    refreshInstall: async (installId) => {
      await deps.actors.ask(installKey(installId), { type: 'refresh' }, { timeoutMs: 5_000, idempotent: true });
    },
  };

  const metrics = chatCatchUpMetrics(deps.metrics);
  // INTERFACE §10.6: gaps in Slack's deliveries, recorded while the events transport runs.
  const gaps = new GapWatch({
    pool: deps.requestPool,
    kv: deps.cursors,
    log,
    wake: startBackfill,
    onGap: (reason, n) => metrics.gaps.inc({ reason }, n),
  });

  // The intake's install cache trusts only what it hears: while the events transport runs.
  const hearInstalls = () => hearChatInstallChanges(pool, log, intake.installs);
  let socketHearing: { stop(): Promise<void> } | null = null;

  const plugins: Array<FastifyPluginAsync<EdgeContext>> = [
    // INTERFACE §9.3: a request waits at most 2 s for Postgres (then 503), as every route does.
    chatOAuthRoutes({ config, pool: deps.requestPool, cipher: deps.cipher, log, startBackfill }),
  ];
  const { transport, signingSecret, appToken } = config.chatapp;
  // spec §5, INTERFACE §8.18: the HTTP events route exists only with HTTP transport.
  if (transport === 'http' && signingSecret)
    plugins.push(chatEventsRoute({ signingSecret, intake, log, hearInstallChanges: () => hearInstalls(), gaps }));
  const socket: SocketModeTransport | null =
    transport === 'socket' && appToken
      ? chatSocketMode({ appToken, apiUrl: config.chatapp.apiUrl, log, intake })
      : null;

  return {
    id: 'chatapp',
    driver: config.chatapp.enabled
      ? chatDriver({
          config,
          pool,
          credentials,
          permits,
          wantNames: (installId, ids) =>
            deps.actors.ask(chatNamesKey(installId), { type: 'want', ...ids }, { timeoutMs: NAMES_ASK_TIMEOUT_MS }),
        })
      : null,
    actors: [
      chatBucketActor({ actors: deps.actors, kv: deps.dedup }),
      chatWorkspaceBucketActor({ kv: deps.dedup }),
      chatNamesActor({ config, pool, log, actors: deps.actors, publish: (e) => deps.publish(e), credentials }),
      chatBackfillActor({
        config,
        pool,
        log,
        actors: deps.actors,
        cursors: deps.cursors,
        publish: (e) => deps.publish(e),
        credentials,
        onRecovered: (n) => metrics.recovered.inc(n),
      }),
    ],
    routes: async (app, ctx) => {
      for (const p of plugins) await app.register(p, ctx);
    },
    startEdge: socket
      ? () => {
          socketHearing ??= hearInstalls();
          gaps.start();
          return socket.start();
        }
      : undefined,
    stopEdge: socket
      ? async () => {
          await socket.stop();
          await gaps.stop();
          await socketHearing?.stop();
          socketHearing = null;
        }
      : undefined,
    /** Walkers of unfinished backfills and open catch-ups whose key hashes to one of `shards` resume here. */
    async resumeShards(shards) {
      if (!config.chatapp.enabled) return;
      const open = new Set([...(await listUnfinishedBackfills(pool)), ...(await listOpenCatchUps(pool))]);
      const mine = [...open].filter((id) => shards.has(deps.shardOf(chatBackfillKey(id))));
      const results = await Promise.allSettled(mine.map((id) => startBackfill(id)));
      const failed = mine.filter((_, i) => results[i]!.status === 'rejected');
      if (failed.length === 0) return;
      log.warn(
        { shards: [...shards], failed: failed.length, of: mine.length },
        'some chat backfill walkers did not resume; retrying shortly',
      );
      // Once more, later and off the acquisition path; the ask reaches whoever owns the key by then.
      void resumeAgain(failed, startBackfill).then((still) => {
        if (still.length > 0)
          log.error(
            { shards: [...shards], failed: still.length },
            'chat backfill walkers still not resumed; the resume sweep retries within a minute',
          );
      });
    },
  };
};
