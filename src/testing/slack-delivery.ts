/**
 * The Events API's delivery side of the fake Slack as Slack runs it (INTERFACE §10.6): a
 * message posted by a person lands in the channel's history (with a timestamp of the real
 * clock, so a window in time finds it) and is delivered to the service, retried after a
 * failure (Slack: at once, after 1 minute, after 5 minutes; here `retryDelaysMs`) and then
 * given up for good. `drop(teamId, ms)` makes Slack's rate limiter drop the team's events
 * for a while, and `appRateLimited` sends the `app_rate_limited` notice Slack sends then.
 */
import type { FakeSlack } from './slack-fake.js';
import { messageEvent, signedHeaders } from './slack-events.js';
import type { FakeMessage } from './slack-model.js';

export interface DeliveryRecord {
  teamId: string;
  channel: string;
  ts: string;
  attempts: number;
  outcome: 'delivered' | 'given_up' | 'dropped';
}

let lastMicros = 0;
/** A Slack timestamp of now, strictly increasing within the process. */
export function liveTs(): string {
  const micros = Math.max(Date.now() * 1000, lastMicros + 1);
  lastMicros = micros;
  return `${Math.floor(micros / 1_000_000)}.${String(micros % 1_000_000).padStart(6, '0')}`;
}

export class SlackDelivery {
  readonly records: DeliveryRecord[] = [];
  private readonly dropping = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly fake: FakeSlack,
    private readonly o: { retryDelaysMs?: number[]; user?: string } = {},
  ) {}

  /** Slack's rate limiter drops the team's events for `ms` from now. */
  drop(teamId: string, ms: number): void {
    this.dropping.set(teamId, Date.now() + ms);
  }

  /** A person posts `text` in the channel (a reply when `threadTs` is set); the event goes out. */
  post(teamId: string, channelId: string, text: string, threadTs?: string): FakeMessage {
    const team = this.fake.team(teamId);
    const ch = team.channels.get(channelId);
    if (!ch) throw new Error(`fake slack: no channel ${channelId}`);
    const msg: FakeMessage = { ts: liveTs(), text, user: this.o.user ?? 'UPERSON' };
    if (threadTs) {
      const parent = ch.messages.find((m) => m.ts === threadTs);
      if (!parent) throw new Error(`fake slack: no thread ${threadTs}`);
      (parent.replies ??= []).push({ ...msg, thread_ts: threadTs });
    } else ch.messages.push(msg);
    const event = messageEvent(team, ch, threadTs ? { ...msg, thread_ts: threadTs } : msg);
    const record: DeliveryRecord = { teamId, channel: channelId, ts: msg.ts, attempts: 0, outcome: 'dropped' };
    this.records.push(record);
    if ((this.dropping.get(teamId) ?? 0) > Date.now()) return msg;
    const sending = this.send(teamId, event, record).finally(() => this.inFlight.delete(sending));
    this.inFlight.add(sending);
    return msg;
  }

  /** Every delivery under way has been delivered or given up. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Slack's notice that it is dropping the team's events for the minute `minute` (epoch seconds). */
  async appRateLimited(teamId: string, minute = Math.floor(Date.now() / 60_000) * 60): Promise<Response> {
    const body = JSON.stringify({
      token: 'deprecated-verification-token',
      type: 'app_rate_limited',
      team_id: teamId,
      minute_rate_limited: minute,
      api_app_id: this.fake.appId,
    });
    return fetch(this.url(), { method: 'POST', headers: signedHeaders(this.fake.signingSecret, body, 'valid'), body });
  }

  private url(): string {
    if (!this.fake.eventsUrl) throw new Error('fake slack: eventsUrl is not set');
    return this.fake.eventsUrl;
  }

  private async send(teamId: string, event: Record<string, unknown>, record: DeliveryRecord): Promise<void> {
    const delays = [0, ...(this.o.retryDelaysMs ?? [60_000, 300_000])];
    const eventId = `Ev${record.ts.replace('.', '')}`;
    for (const [i, delay] of delays.entries()) {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      record.attempts++;
      try {
        const res = await this.fake.deliver(teamId, event, {
          eventId,
          ...(i > 0 ? { retryNum: i } : {}),
          signal: AbortSignal.timeout(3_000),
        });
        await res.arrayBuffer();
        if (res.ok) {
          record.outcome = 'delivered';
          return;
        }
      } catch {
        // Refused, reset or no answer in 3 s: Slack counts it a failure and retries.
      }
    }
    record.outcome = 'given_up';
  }
}
