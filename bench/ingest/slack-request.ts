/**
 * One signed Slack Events API request, as Slack sends it over HTTP (INTERFACE §3
 * `chatapp/events`): an `event_callback` envelope around a channel `message` event of
 * about 2.4 KB (text and its `rich_text` blocks), `X-Slack-Request-Timestamp` and
 * `X-Slack-Signature: v0=<hex hmac_sha256(secret, "v0:{ts}:{raw body}")>`.
 *
 * The service names a message event `message:{channel}:{ts}` (normalize-event.ts), so a
 * run's events are found afterwards by their channel ids: every channel id starts with `C`
 * and the run's prefix in Slack's alphabet (`slackRunTag`), and the bench counts ids
 * starting with `slackIdPrefix(prefix)`. The message `ts` is the send time (ms precision,
 * what the service keeps as `occurred_at`) plus a per-request counter in the microsecond
 * digits, so ids never collide within a channel and `received_at - occurred_at` is the
 * event-to-committed latency, as on the GitHub route.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { SignedDelivery } from './webhook-request.js';

/** Channels per workspace and senders per run: traffic spread like a busy workspace's. */
const SLACK_CHANNELS = 8;
const USERS = 64;
const FILLER =
  'The deploy of the ingest path went out at noon; latency graphs look flat, ' +
  'queue depth stays under a hundred and nobody has been paged since. ';

/**
 * A run prefix (`edge1i1s-`) in the upper-case alphanumerics of Slack ids (`EDGE1I1SX`),
 * character by character, so a tag's image is still a prefix of its runs' images.
 */
export function slackRunTag(prefix: string): string {
  return prefix.toUpperCase().replace(/[^A-Z0-9]/g, 'X');
}

/** What every event id of a run with this prefix starts with. */
export function slackIdPrefix(prefix: string): string {
  return `message:C${slackRunTag(prefix)}`;
}

/** Unique within a millisecond up to 1 000 requests; the service reads ms from the first 3 digits. */
function messageTs(nowMs: number, n: number): string {
  const s = Math.floor(nowMs / 1000);
  const ms = String(nowMs % 1000).padStart(3, '0');
  return `${s}.${ms}${String(n % 1000).padStart(3, '0')}`;
}

function richTextBlock(text: string, user: string, n: number) {
  return [
    {
      type: 'rich_text',
      block_id: `b${n.toString(36)}`,
      elements: [
        {
          type: 'rich_text_section',
          elements: [
            { type: 'user', user_id: user },
            { type: 'text', text: ` ${text}` },
            { type: 'link', url: 'https://status.example.com/incidents/1234', text: 'status page' },
          ],
        },
      ],
    },
  ];
}

export function signedSlackEvent(opts: {
  signingSecret: string;
  teamId: string;
  /** The request's number within the run: picks channel and user, and makes ts unique. */
  n: number;
  /** The run's prefix (see `slackRunTag`). */
  prefix: string;
  nowMs?: number;
}): SignedDelivery {
  const nowMs = opts.nowMs ?? Date.now();
  const tag = slackRunTag(opts.prefix);
  const channel = `C${tag}${opts.n % SLACK_CHANNELS}`;
  const user = `UBENCH${String(opts.n % USERS).padStart(4, '0')}`;
  const ts = messageTs(nowMs, opts.n);
  const text = `Message ${opts.n} for <#${channel}>: ${FILLER.repeat(5)}`;
  const payload = {
    token: 'benchVerificationTokenUnused0',
    team_id: opts.teamId,
    context_team_id: opts.teamId,
    context_enterprise_id: null,
    api_app_id: 'A0BENCHAPP1',
    event: {
      type: 'message',
      channel,
      channel_type: 'channel',
      user,
      text,
      ts,
      event_ts: ts,
      client_msg_id: `${randomBytes(4).toString('hex')}-bench-${opts.n}`,
      team: opts.teamId,
      blocks: richTextBlock(text, user, opts.n),
    },
    type: 'event_callback',
    // Slack's event ids are unique per event, retries aside.
    event_id: `Ev${tag}${opts.n.toString(36).toUpperCase()}${randomBytes(3).toString('hex').toUpperCase()}`,
    event_time: Math.floor(nowMs / 1000),
    authorizations: [
      { enterprise_id: null, team_id: opts.teamId, user_id: 'UBENCHBOT1', is_bot: true, is_enterprise_install: false },
    ],
    is_ext_shared_channel: false,
    event_context: `4-bench-${tag}-${opts.n}`,
  };
  const body = JSON.stringify(payload);
  const timestamp = String(Math.floor(nowMs / 1000));
  const signature = createHmac('sha256', opts.signingSecret).update(`v0:${timestamp}:${body}`).digest('hex');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': `v0=${signature}`,
    },
  };
}
