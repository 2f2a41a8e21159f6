/**
 * The one upstream call of a backfill step, with Slack's answer sorted into the walk's
 * outcomes (backfill-walk.ts) by the one classifier (`slackFailure`). Only an abort (the
 * walker is passivating) throws.
 */
import type { Logger } from '../../log.js';
import type { Call, Outcome } from './backfill-walk.js';
import { slackClient } from './slack-client.js';
import { slackFailure } from './slack-errors.js';

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
    return slackFailure(err, call.method);
  }
}
