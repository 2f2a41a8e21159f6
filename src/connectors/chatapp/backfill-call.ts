/**
 * The one upstream call of a backfill step, with Slack's answer sorted into the walk's
 * outcomes (backfill-walk.ts). Only an abort (the walker is passivating) throws.
 */
import type { Logger } from '../../log.js';
import type { Call, Outcome } from './backfill-walk.js';
import { slackClient } from './slack-client.js';
import { isDeadToken, platformError, rateLimitedFor } from './slack-errors.js';

export async function callWalkMethod(
  o: { apiUrl: string; log: Logger; token: string; signal: AbortSignal },
  call: Call,
): Promise<Outcome> {
  try {
    const data = await slackClient({ apiUrl: o.apiUrl, log: o.log, token: o.token, signal: o.signal }).apiCall(
      call.method,
      call.params,
    );
    return { ok: true, data: data as unknown as Record<string, unknown> };
  } catch (err) {
    if (o.signal.aborted) throw err;
    const retryAfterS = rateLimitedFor(err);
    if (retryAfterS !== null) return { ok: false, kind: 'rate_limited', retryAfterMs: retryAfterS * 1000 };
    const upstream = platformError(err);
    if (upstream !== null)
      return isDeadToken(err)
        ? { ok: false, kind: 'dead_token', error: upstream }
        : { ok: false, kind: 'platform', error: upstream };
    return { ok: false, kind: 'transient', error: err instanceof Error ? err.message : String(err) };
  }
}
