/**
 * `POST /api/v1/connectors/chatapp/events`, the HTTP transport (INTERFACE §3), mounted
 * only when the signing secret is set and Socket Mode is off. Its own encapsulated
 * context keeps the raw bytes (the signature covers them, not a re-serialisation) and
 * accepts webhook-sized bodies. 200 is answered only after the event is durably
 * published (event-intake.ts); anything else makes Slack retry.
 */
import type { FastifyPluginAsync } from 'fastify';
import { BadRequest, Unauthorized } from '../../../errors.js';
import type { EdgeContext } from '../../context.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../json-depth.js';
import { rawBodyUnderBudget } from '../../raw-body.js';
import { DOCUMENTATION_ONLY } from '../../openapi.js';
import type { Logger } from '../../../log.js';
import { takeEventCallback, withBudget, type IntakeDeps } from '../../../connectors/chatapp/event-intake.js';
import type { GapWatch } from '../../../connectors/chatapp/gap-watch.js';
import { verifySlackSignature } from '../../../connectors/chatapp/verify-signature.js';
import { EVENTS_SCHEMA } from './events-schema.js';

export const EVENTS_PATH = '/api/v1/connectors/chatapp/events';
/** INTERFACE §9.3: answered within Slack's 3 s whatever Postgres or NATS do. */
const ROUTE_BUDGET_MS = 2_600;
/** INTERFACE §9.3: Slack's events are small; 1 MiB is plenty and bounds what an unsigned sender can make us hold. */
const CHAT_EVENTS_BODY_LIMIT = 1024 * 1024;

export function chatEventsRoute(deps: {
  signingSecret: string;
  intake: IntakeDeps;
  log: Logger;
  /** Keeps the intake's install cache hearing install changes while this route is mounted. */
  hearInstallChanges?: () => { stop(): Promise<void> };
  /** INTERFACE §10.6: records the windows Slack's deliveries may have missed; beats while the route is mounted. */
  gaps?: GapWatch;
}): FastifyPluginAsync<EdgeContext> {
  return async (app, ctx) => {
    const hearing = deps.hearInstallChanges?.();
    if (hearing) app.addHook('onClose', () => hearing.stop());
    const gaps = deps.gaps;
    if (gaps) {
      app.addHook('onReady', async () => gaps.start());
      app.addHook('onClose', () => gaps.stop());
    }
    // INTERFACE §9.3: at most 1 MiB, read under the node's budget of unverified bytes.
    rawBodyUnderBudget(app, ctx.unverifiedBytes, CHAT_EVENTS_BODY_LIMIT);

    app.post(
      EVENTS_PATH,
      { bodyLimit: CHAT_EVENTS_BODY_LIMIT, schema: EVENTS_SCHEMA, validatorCompiler: DOCUMENTATION_ONLY },
      async (req) => {
        const started = performance.now();
        const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const header = (name: string) => {
          const v = req.headers[name];
          return typeof v === 'string' ? v : undefined;
        };
        const verdict = verifySlackSignature(deps.signingSecret, {
          timestamp: header('x-slack-request-timestamp'),
          signature: header('x-slack-signature'),
          rawBody,
        });
        if (!verdict.ok) {
          deps.log.warn({ reason: verdict.reason }, 'chat event refused: bad Slack signature');
          throw new Unauthorized('the Slack request signature is missing, stale or wrong');
        }
        if (jsonTooDeep(rawBody)) throw new BadRequest(`event JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
        let body: { type?: unknown; challenge?: unknown };
        try {
          body = JSON.parse(rawBody.toString('utf8')) as typeof body;
        } catch {
          throw new BadRequest('the event body is not JSON');
        }
        if (body?.type === 'url_verification')
          return { challenge: typeof body.challenge === 'string' ? body.challenge : '' };
        const teamId = (body as { team_id?: unknown }).team_id;
        if (body?.type === 'app_rate_limited') {
          // Slack drops this workspace's events for the rest of the minute: INTERFACE §10.6, a gap to re-read.
          deps.log.warn({ teamId }, 'Slack rate-limited event delivery to this app (app_rate_limited)');
          if (gaps && typeof teamId === 'string' && teamId.length > 0 && teamId.length <= 255) {
            const left = ROUTE_BUDGET_MS - (performance.now() - started);
            const minute = (body as { minute_rate_limited?: unknown }).minute_rate_limited;
            await withBudget(gaps.rateLimited(teamId, minute), Math.max(1, left));
          }
        }
        if (body?.type === 'event_callback') {
          // Slack gives 3 s: whatever is slow (Postgres, NATS), answer 503 before it gives up.
          const left = ROUTE_BUDGET_MS - (performance.now() - started);
          try {
            const result = await takeEventCallback(deps.intake, body, Math.max(1, left));
            if (header('x-slack-retry-num'))
              deps.log.debug({ retry: header('x-slack-retry-num'), result }, 'Slack retry handled');
          } catch (err) {
            // INTERFACE §10.6: Slack may give up on what this node refused; the window is re-read.
            if (gaps && typeof teamId === 'string' && teamId.length > 0 && teamId.length <= 255)
              gaps.refused(teamId, eventTimeMs(body));
            throw err;
          }
        }
        return { ok: true };
      },
    );
  };
}

/** When Slack says the event happened (`event_time`, seconds), if it is sane; else now. */
function eventTimeMs(body: unknown): number {
  const t = Number((body as { event_time?: unknown }).event_time) * 1000;
  const now = Date.now();
  return Number.isFinite(t) && t <= now && now - t < 3_600_000 ? t : now;
}
