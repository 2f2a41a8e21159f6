/**
 * Plugs GitHub delivery reconciliation (INTERFACE §9.4) into the code-host module: the
 * runner actor, its resume when a node acquires the runner's shard, and its metrics.
 * Off when the connector is not enabled and fully configured, or when
 * `SERVICE_GITHUB_RECONCILE_S=0`.
 */
import { Counter } from 'prom-client';
import { codehostReconcilerActor } from '../actors/codehost/delivery-reconciler.js';
import { codehostReconcileKey } from '../actors/codehost/delivery-reconciler-protocol.js';
import type { GithubClients } from '../connectors/codehost/github-client.js';
import { listHookDeliveries, requestRedelivery } from '../connectors/codehost/hook-deliveries.js';
import { MAX_REDELIVERIES, reconcileDeliveries } from '../connectors/codehost/reconcile-deliveries.js';
import type { ActorKind } from '../runtime/actor-definition.js';
import { kvKey } from '../runtime/kv-port.js';
import type { ModuleDeps } from './module.js';
import { storedDeliveryGuids } from '../store/delivery-guids.js';
import { forgetOldRedeliveries, returnRedeliveryRequest, takeRedeliveryRequest } from '../store/github-redeliveries.js';

export interface ReconcilerParts {
  actors: ActorKind[];
  resumeShards(shards: ReadonlySet<number>): Promise<void>;
}

const CLAIM = new TextEncoder().encode('1');

export function attachReconciler(deps: ModuleDeps, clients: GithubClients | null): ReconcilerParts {
  const { config } = deps;
  const appId = config.codehost.appId;
  if (clients === null || appId === null || config.githubReconcileMs === 0) {
    return { actors: [], resumeShards: async () => undefined };
  }
  const counted = deps.metrics
    ? new Counter({
        name: 'connector_service_github_reconcile_deliveries_total',
        help:
          'GitHub deliveries found failed and never stored (found_failed), redeliveries ' +
          'requested (redelivered), and failed deliveries no longer asked for after 5 redeliveries (given_up)',
        labelNames: ['result'],
        registers: [deps.metrics],
      })
    : null;
  // Claims live in the dedup bucket (10 minutes), longer than a pass looks behind its checkpoint.
  const claimKey = (id: number) => kvKey(['codehost-redeliver', String(appId), String(id)]);
  const key = codehostReconcileKey(appId);
  const actor = codehostReconcilerActor({
    periodMs: config.githubReconcileMs,
    kv: deps.cursors,
    actors: deps.actors,
    async pass(checkpoint, signal) {
      const app = clients.forApp();
      // GitHub keeps three days of deliveries; the counts of older guids can go.
      await forgetOldRedeliveries(deps.pool);
      return reconcileDeliveries(
        {
          pages: listHookDeliveries(app, signal),
          storedGuids: (guids) => storedDeliveryGuids(deps.pool, guids),
          claim: async (id) => (await deps.dedup.create(claimKey(id), CLAIM)) !== null,
          release: (id) => deps.dedup.delete(claimKey(id)),
          takeRequest: (guid) => takeRedeliveryRequest(deps.pool, appId, guid, MAX_REDELIVERIES),
          returnRequest: (guid) => returnRedeliveryRequest(deps.pool, appId, guid),
          redeliver: (id) => requestRedelivery(app, id, signal),
          now: Date.now,
        },
        checkpoint,
      );
    },
    onOutcome(o) {
      counted?.inc({ result: 'found_failed' }, o.foundFailed);
      counted?.inc({ result: 'redelivered' }, o.redelivered);
      counted?.inc({ result: 'given_up' }, o.givenUp.length);
    },
  });
  return {
    actors: [actor],
    async resumeShards(shards) {
      if (!shards.has(deps.shardOf(key))) return;
      await deps.actors.ask(key, { type: 'resume' }, { idempotent: true }).catch((err: unknown) => {
        deps.log.warn(
          { err },
          'GitHub delivery reconciliation did not resume; the resume sweep retries within a minute',
        );
      });
    },
  };
}
