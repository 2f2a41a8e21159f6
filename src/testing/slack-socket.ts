/**
 * The fake Slack's Socket Mode endpoint (`ws` server): `apps.connections.open` issues a
 * one-time ticket URL, the socket greets with `hello`, `events_api` envelopes go out and
 * their acks (`{envelope_id}`) come back. `drop()` cuts every connection as a network
 * failure would; `connections` records when each socket opened and `refusals` when an
 * upgrade was refused (reconnect timing).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { eventEnvelope } from './slack-events.js';
import type { FakeSlackWorld } from './slack-model.js';

export class FakeSocketMode {
  readonly connections: Array<{ openedAt: number }> = [];
  readonly refusals: number[] = [];
  readonly acks = new Set<string>();
  /** Refuse this many upgrades (a flapping edge), to exercise the backoff. */
  refuseNext = 0;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly tickets = new Set<string>();
  private readonly open = new Set<WebSocket>();
  private readonly waiting = new Map<string, () => void>();

  constructor(private readonly fake: FakeSlackWorld) {}

  issueUrl(wsBase: string): string {
    const ticket = randomBytes(8).toString('hex');
    this.tickets.add(ticket);
    return `${wsBase}/link/?ticket=${ticket}&app_id=${this.fake.appId}`;
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== '/link/' || !this.tickets.delete(ticket) || this.refuseNext > 0) {
      if (this.refuseNext > 0) {
        this.refuseNext--;
        this.refusals.push(Date.now());
      }
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.open.add(ws);
      this.connections.push({ openedAt: Date.now() });
      ws.on('close', () => this.open.delete(ws));
      ws.on('message', (data) => {
        try {
          const m = JSON.parse(String(data)) as { envelope_id?: string };
          if (m.envelope_id) {
            this.acks.add(m.envelope_id);
            this.waiting.get(m.envelope_id)?.();
          }
        } catch {
          // not an ack
        }
      });
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: this.open.size,
          connection_info: { app_id: this.fake.appId },
          debug_info: { host: 'fake' },
        }),
      );
    });
  }

  get openCount(): number {
    return this.open.size;
  }

  /** Sends one `events_api` envelope; resolves with whether it was acked within `timeoutMs`. */
  async push(
    teamId: string,
    event: Record<string, unknown>,
    o: { retryAttempt?: number; eventId?: string; timeoutMs?: number } = {},
  ): Promise<{ envelopeId: string; acked: boolean }> {
    const sent = this.send(teamId, event, o);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), o.timeoutMs ?? 5_000)));
    const ok = await Promise.race([sent.acked, late]);
    clearTimeout(timer);
    if (!ok) this.waiting.delete(sent.envelopeId);
    return { envelopeId: sent.envelopeId, acked: ok };
  }

  /** Sends one `events_api` envelope and returns at once; `acked` resolves when its ack comes back. */
  send(
    teamId: string,
    event: Record<string, unknown>,
    o: { retryAttempt?: number; eventId?: string } = {},
  ): { envelopeId: string; acked: Promise<true> } {
    const ws = [...this.open][0];
    if (!ws) throw new Error('fake slack: no Socket Mode connection');
    const envelopeId = randomBytes(8).toString('hex');
    const acked = new Promise<true>((resolve) => {
      this.waiting.set(envelopeId, () => {
        this.waiting.delete(envelopeId);
        resolve(true);
      });
    });
    ws.send(
      JSON.stringify({
        envelope_id: envelopeId,
        type: 'events_api',
        accepts_response_payload: false,
        retry_attempt: o.retryAttempt ?? 0,
        retry_reason: o.retryAttempt ? 'timeout' : '',
        payload: eventEnvelope(this.fake, teamId, event, o.eventId),
      }),
    );
    return { envelopeId, acked };
  }

  /** Cut every connection without a close handshake. */
  drop(): void {
    for (const ws of this.open) ws.terminate();
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}
