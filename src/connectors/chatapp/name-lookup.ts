/**
 * One name lookup (INTERFACE §9.5): `users.info` for a user, `conversations.info` for a
 * channel, its answer as the `user_info` / `channel_info` event to publish. Expected
 * outcomes are values; only an abort throws.
 */
import type { Logger } from '../../log.js';
import { channelInfoEvent, userInfoEvent } from './normalize-names.js';
import type { ChatEventDraft } from './chat-event.js';
import { slackClient } from './slack-client.js';
import { slackFailure } from './slack-errors.js';

export type NameTarget = { type: 'user' | 'channel'; id: string };

export type LookupOutcome =
  | { ok: true; event: ChatEventDraft | null }
  | { ok: false; kind: 'rate_limited'; retryAfterMs: number }
  /** The platform refused for good (user_not_found, channel_not_found, missing_scope...): do not ask again. */
  | { ok: false; kind: 'refused'; error: string }
  | { ok: false; kind: 'transient'; error: string };

/** Web API method per target and the gap kept between two calls of it (Tier 4 and Tier 3, with headroom). */
const LOOKUP_METHOD = { user: 'users.info', channel: 'conversations.info' } as const;
export const LOOKUP_INTERVAL_MS = { user: 1_000, channel: 2_000 } as const;

export async function lookupName(
  o: { apiUrl: string; log: Logger; token: string; signal: AbortSignal },
  target: NameTarget,
): Promise<LookupOutcome> {
  try {
    const client = slackClient({ apiUrl: o.apiUrl, log: o.log, token: o.token, signal: o.signal });
    if (target.type === 'user') {
      const res = await client.users.info({ user: target.id });
      return { ok: true, event: userInfoEvent(res.user) };
    }
    const res = await client.conversations.info({ channel: target.id });
    return { ok: true, event: channelInfoEvent(res.channel) };
  } catch (err) {
    if (o.signal.aborted) throw err;
    const failed = slackFailure(err, LOOKUP_METHOD[target.type]);
    // A dead token is a refusal here: the install's uninstall handles the token itself.
    return failed.kind === 'dead_token' ? { ok: false, kind: 'refused', error: failed.error } : failed;
  }
}
