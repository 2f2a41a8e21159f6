/**
 * The Socket Mode transport (spec §5, INTERFACE §8.18), on the edge role: an outbound
 * WebSocket with `@slack/socket-mode`, opened with the app-level token. Each
 * `events_api` envelope is acknowledged only after its event was durably published
 * (event-intake.ts); an envelope that could not be taken stays unacknowledged and Slack
 * delivers it again. The SDK's own reconnect (linear steps) is off: ours follows the
 * spec's exponential backoff with full jitter (reconnect-backoff.ts).
 */
import { SocketModeClient } from '@slack/socket-mode';
import type { Logger } from '../../log.js';
import { takeEventCallback, type IntakeDeps } from './event-intake.js';
import { reconnectDelayMs } from './reconnect-backoff.js';
import { slackLogger } from './slack-client.js';

export interface SocketModeDeps {
  appToken: string;
  apiUrl: string;
  log: Logger;
  intake: IntakeDeps;
  random?: () => number;
}

interface Envelope {
  ack(response?: Record<string, unknown>): Promise<void>;
  type: string;
  body: unknown;
  envelope_id?: string;
  retry_num?: number;
}

export interface SocketModeTransport {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Connected right now (for tests and readiness). */
  connected(): boolean;
}

export function chatSocketMode(deps: SocketModeDeps): SocketModeTransport {
  const log = deps.log.child({ component: 'chat-socket-mode' });
  const client = new SocketModeClient({
    appToken: deps.appToken,
    autoReconnectEnabled: false,
    logger: slackLogger(log),
    clientOptions: { slackApiUrl: deps.apiUrl, retryConfig: { retries: 0 }, timeout: 10_000 },
  });
  let stopping = false;
  let isConnected = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;

  const schedule = () => {
    if (stopping || timer) return;
    const delay = reconnectDelayMs(attempt++, deps.random);
    log.info({ delayMs: delay, attempt }, 'Socket Mode disconnected; reconnecting');
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, delay);
  };

  const connect = async () => {
    if (stopping) return;
    try {
      await client.start();
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'Socket Mode connection failed');
      schedule();
    }
  };

  client.on('connected', () => {
    isConnected = true;
    attempt = 0;
    log.info('Socket Mode connected');
  });
  client.on('disconnected', () => {
    isConnected = false;
    schedule();
  });
  client.on('slack_event', (e: Envelope) => {
    void onEnvelope(e);
  });

  const onEnvelope = async (e: Envelope) => {
    if (e.type !== 'events_api') {
      // Interactivity and slash commands are not part of this connector; ack so Slack does not resend.
      await e.ack().catch(() => undefined);
      return;
    }
    try {
      await takeEventCallback(deps.intake, e.body);
    } catch (err) {
      log.warn(
        { err, envelopeId: e.envelope_id, retry: e.retry_num },
        'chat event not stored; leaving it unacknowledged for redelivery',
      );
      return;
    }
    await e
      .ack()
      .catch((err: unknown) =>
        log.warn({ err, envelopeId: e.envelope_id }, 'ack not sent; Slack will redeliver (deduplicated)'),
      );
  };

  return {
    async start() {
      stopping = false;
      // Node start never waits on Slack: the first connection is made in the background.
      void connect();
    },
    async stop() {
      stopping = true;
      clearTimeout(timer);
      timer = undefined;
      await client.disconnect().catch(() => undefined);
      isConnected = false;
    },
    connected: () => isConnected,
  };
}
