/**
 * `POST /api/v1/connectors/chatapp/events`, the HTTP transport (INTERFACE §3), mounted
 * only when the signing secret is set and Socket Mode is off. Its own encapsulated
 * context keeps the raw bytes (the signature covers them, not a re-serialisation) and
 * accepts webhook-sized bodies. 200 is answered only after the event is durably
 * published (event-intake.ts); anything else makes Slack retry.
 */
import type { FastifyPluginAsync } from 'fastify';
import { BadRequest, Unauthorized } from '../../../errors.js';
import { WEBHOOK_BODY_LIMIT, type EdgeContext } from '../../context.js';
import type { Logger } from '../../../log.js';
import { takeEventCallback, type IntakeDeps } from '../../../connectors/chatapp/event-intake.js';
import { verifySlackSignature } from '../../../connectors/chatapp/verify-signature.js';

export const EVENTS_PATH = '/api/v1/connectors/chatapp/events';

export function chatEventsRoute(deps: {
  signingSecret: string;
  intake: IntakeDeps;
  log: Logger;
}): FastifyPluginAsync<EdgeContext> {
  return async (app) => {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser(
      'application/json',
      { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT },
      (_req, body, done) => done(null, body),
    );

    app.post(EVENTS_PATH, { bodyLimit: WEBHOOK_BODY_LIMIT }, async (req) => {
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
      let body: { type?: unknown; challenge?: unknown };
      try {
        body = JSON.parse(rawBody.toString('utf8')) as typeof body;
      } catch {
        throw new BadRequest('the event body is not JSON');
      }
      if (body?.type === 'url_verification')
        return { challenge: typeof body.challenge === 'string' ? body.challenge : '' };
      if (body?.type === 'app_rate_limited') {
        // Slack drops this workspace's events for the rest of the minute; nothing to ingest, but say so.
        deps.log.warn(
          { teamId: (body as { team_id?: unknown }).team_id },
          'Slack rate-limited event delivery to this app (app_rate_limited)',
        );
      }
      if (body?.type === 'event_callback') {
        const result = await takeEventCallback(deps.intake, body);
        if (header('x-slack-retry-num'))
          deps.log.debug({ retry: header('x-slack-retry-num'), result }, 'Slack retry handled');
      }
      return { ok: true };
    });
  };
}
