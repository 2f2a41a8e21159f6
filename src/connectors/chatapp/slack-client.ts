/**
 * The one way chat code gets a `@slack/web-api` client. STYLE.md: SDK clients inside
 * actors run with retries off and `rejectRateLimitedCalls: true`; pacing and rate limits
 * belong to the bucket actors and the backfill walker, never to a sleep inside the SDK.
 * The caller's AbortSignal (an actor message deadline) reaches every request.
 */
import { LogLevel, WebClient, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from '../../log.js';

export interface SlackClientOptions {
  /** `CHATAPP_API_URL` (ends with `/`). */
  apiUrl: string;
  log: Logger;
  token?: string;
  signal?: AbortSignal;
  /** Per request; Slack answers in well under a second when healthy. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

export function slackClient(o: SlackClientOptions): WebClient {
  const signal = o.signal;
  return new WebClient(o.token, {
    slackApiUrl: o.apiUrl,
    logger: slackLogger(o.log),
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    // A method name must never redirect a bot token to another host.
    allowAbsoluteUrls: false,
    ...(signal
      ? {
          fetch: (url, init) =>
            fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal }),
        }
      : {}),
  });
}

/**
 * The SDK's logger interface on pino. Debug lines are dropped: the SDK logs request
 * bodies there, and `oauth.v2.access` bodies carry the client secret (its redaction only
 * covers keys named like "token").
 */
export function slackLogger(log: Logger): SlackLogger {
  const line = (msg: unknown[]) => msg.map((m) => (m instanceof Error ? m.message : String(m))).join(' ');
  let level = LogLevel.INFO;
  return {
    debug: () => undefined,
    info: (...m: unknown[]) => log.info({ component: 'slack-sdk' }, line(m)),
    warn: (...m: unknown[]) => log.warn({ component: 'slack-sdk' }, line(m)),
    error: (...m: unknown[]) => log.error({ component: 'slack-sdk' }, line(m)),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
