/**
 * Webhooks to tenants (INTERFACE §10.2): the routes, one delivery actor per webhook, and
 * their resume: on the node that acquires a shard (and every minute, the resume sweep), each
 * webhook that delivers and whose key hashes to that shard is asked to `resume`.
 */
import { Counter } from 'prom-client';
import { webhookActor } from '../actors/webhooks/webhook-actor.js';
import { webhookKey } from '../actors/webhooks/webhook-protocol.js';
import { webhookRoutes } from '../edge/routes/webhooks.js';
import { deliveringWebhookIds } from '../store/webhook-deliveries.js';
import type { ServiceModuleFactory } from './module.js';

export const webhooksModule: ServiceModuleFactory = (deps) => {
  const { config, cipher, actors, pool, log } = deps;
  const policy = config.follow.webhooks;
  const attempts = deps.metrics
    ? new Counter({
        name: 'connector_service_webhook_deliveries_total',
        help: 'Webhook delivery attempts by outcome: delivered (2xx) or failed (any other answer, no answer, refused)',
        labelNames: ['outcome'],
        registers: [deps.metrics],
      })
    : null;
  const resume = (id: string) => actors.ask(webhookKey(id), { type: 'resume' }, { idempotent: true });
  return {
    id: 'webhooks',
    actors: [
      webhookActor({
        pool,
        actors,
        cipher,
        feed: deps.feedNotices,
        policy,
        retentionDays: config.follow.changesRetentionDays,
        onAttempt: (o) => attempts?.inc({ outcome: o.ok ? 'delivered' : 'failed' }),
      }),
    ],
    routes: webhookRoutes({ cipher, policy, resume }),
    async resumeShards(shards) {
      for (const id of await deliveringWebhookIds(pool)) {
        if (!shards.has(deps.shardOf(webhookKey(id)))) continue;
        await resume(id).catch((err: unknown) =>
          log.warn({ err, webhookId: id }, 'webhook actor did not resume; the resume sweep retries within a minute'),
        );
      }
    },
  };
};
