/**
 * The code-host driver the install actor calls (connectors/driver.ts): emit (validated,
 * then through the installation's write actor), health, the upstream part of an
 * uninstall, the self-emit filters inside the ingest transaction, and the PR summary
 * as a durable effect of the event (INTERFACE §9.4). The driver exists even while the connector is off, so health can
 * answer `skeleton` (INTERFACE §8.12); emits then answer 501.
 */
import { NotConfigured } from '../../errors.js';
import type { ConnectorDriver, SelfEmitDrop } from '../driver.js';
import { parseEmit, type CodehostWrite } from './emit-schema.js';
import { installRefOf, type GithubClients, type InstallRef } from './github-client.js';
import { withoutErased } from './forget-erased.js';
import { checkHealth } from './health.js';
import type { WriteOutcome } from './perform-write.js';
import { PR_SUMMARY_EFFECT, prSummaryTarget, summarisePullRequest, type PrSummaryDeps } from './pr-summary.js';
import { tier1DropReason, tier2Drops } from './self-emit-filter.js';
import { describeUpstream } from './upstream-error.js';

export interface CodehostDriverDeps {
  /** Null while the connector is off. */
  clients: GithubClients | null;
  /** `idempotencyKey`: the emit's, recorded with the write (INTERFACE §9.3). */
  write(install: InstallRef, w: CodehostWrite, signal: AbortSignal, idempotencyKey?: string): Promise<WriteOutcome>;
  summary: PrSummaryDeps | null;
}

export function codehostDriver(deps: CodehostDriverDeps): ConnectorDriver {
  return {
    id: 'codehost',

    async emit(ctx, kind, body) {
      if (deps.clients === null) throw new NotConfigured('the code-host connector is not enabled and fully configured');
      // spec §4.2: validated before any upstream call; BadConfig on refusal.
      const w = parseEmit(kind, body);
      return deps.write(installRefOf(ctx.install), w, ctx.signal, ctx.idempotencyKey);
    },

    health: (ctx) => checkHealth(deps.clients, ctx),

    /**
     * Revokes this install's cached installation token (`DELETE /installation/token`).
     * Best-effort: the token dies within the hour anyway and the local credentials are
     * wiped in the same uninstall, so GitHub being down never blocks an uninstall. The
     * GitHub App installation itself stays: other tenants may use it.
     */
    async revokeUpstream(ctx) {
      if (deps.clients === null) return;
      try {
        await deps.clients.revokeCachedToken(installRefOf(ctx.install), ctx.signal);
      } catch (err) {
        const f = describeUpstream(err);
        ctx.log.warn(
          { status: f.status, message: f.message },
          'installation token not revoked upstream; it expires on its own',
        );
      }
    },

    async selfEmitFilter(tx, batches) {
      // spec §6.3, INTERFACE §8.20: dropped events are not stored; one Tier-2 lookup for every
      // install's events in the transaction.
      if (batches.length === 0) return [];
      const tier1 = batches.map(({ events }) => events.map((e) => tier1DropReason(e.kind, e.payload)));
      const survivors = batches.flatMap(({ ctx, events }, b) =>
        events
          .filter((_, i) => tier1[b]![i] === null)
          .map((e) => ({ installId: ctx.install.install_id, payload: e.payload })),
      );
      const tier2 = await tier2Drops(tx, survivors, batches[0]!.ctx.log);
      let next = 0;
      return batches.map(({ ctx, events }, b) =>
        events.map((e, i): SelfEmitDrop | null => {
          const reason = tier1[b]![i];
          let drop: SelfEmitDrop | null = null;
          if (reason != null) drop = { tier: 1, reason };
          else if (tier2[next++]) drop = { tier: 2, reason: 'emitted_by_this_install' };
          if (drop !== null)
            ctx.log.debug({ eventId: e.id, kind: e.kind, reason: drop.reason }, 'self-emit echo dropped');
          return drop;
        }),
      );
    },

    // INTERFACE §10.5: an erased login's text never comes back with a later or repeated event.
    withoutForgotten: (tx, batches) =>
      withoutErased(
        tx,
        batches.map((b) => ({ install: b.ctx.install, events: b.events })),
      ),

    effectsOf: (_install, event) => {
      const pr = prSummaryTarget(event);
      return pr === null ? [] : [{ kind: PR_SUMMARY_EFFECT, serialKey: `pr:${pr.repoFullName}#${pr.number}` }];
    },

    async runEffect(ctx, effect) {
      if (effect.kind !== PR_SUMMARY_EFFECT || deps.summary === null) return;
      await summarisePullRequest(deps.summary, ctx, effect.event, { inserted: effect.firstAttempt });
    },
  };
}
