/**
 * A fake Slack at the HTTP level, for the real `@slack/web-api` and `@slack/socket-mode`
 * to talk to (no module replacement anywhere): the Web API under `/api/<method>` (form or
 * JSON bodies, Bearer or `token` param, OAuth client auth in the body or HTTP Basic), the
 * OAuth authorize step (a consent page for a browser), a Socket Mode WebSocket behind `apps.connections.open`, and
 * the Events API's delivery side: signed POSTs to the service, with retries.
 * Switches: per-method 429s with Retry-After, stalls (hold a request until released),
 * consent (which workspace approves the next install, or a denial), echo of posted
 * messages back to the service.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callMethod } from './slack-methods.js';
import { readParams, scrub, send, splitBasic } from './slack-http.js';
import { authorizeRequest, consentPage, grant, wantsPage } from './slack-authorize.js';
import {
  randomId,
  type ChannelType,
  type FakeChannel,
  type FakeMessage,
  type FakeTeam,
  type FakeSlackWorld,
  type FakeToken,
  type Params,
  type PostedMessage,
} from './slack-model.js';
import { FakeSocketMode } from './slack-socket.js';
import { eventEnvelope, messageEvent, signedHeaders, type Signing } from './slack-events.js';

export interface FakeSlackOptions {
  clientId?: string;
  clientSecret?: string;
  signingSecret?: string;
  appToken?: string;
}

export interface RecordedCall {
  method: string;
  at: number;
  params: Params;
  status: number;
  error?: string;
}

type Stall = { release(): void; reached: Promise<void> };

export class FakeSlack implements FakeSlackWorld {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly signingSecret: string;
  readonly appToken: string;
  readonly appId = 'A0FAKEAPP';
  readonly teams = new Map<string, FakeTeam>();
  readonly tokens = new Map<string, FakeToken>();
  readonly codes = new Map<string, { teamId: string; scopes: string[]; redirectUri: string }>();
  readonly refreshTokens = new Map<string, string>();
  readonly refreshes: Array<{ teamId: string; at: number }> = [];
  readonly posted: PostedMessage[] = [];
  readonly calls: RecordedCall[] = [];
  /** Where Events API deliveries go (the service's `/chatapp/events`). */
  eventsUrl: string | null = null;
  /** Echo the bot's own posts back as message events ('http' or 'socket'). */
  echo: 'http' | 'socket' | null = null;
  readonly socket: FakeSocketMode;
  private consent: { teamId: string; deny?: boolean } | null = null;
  private readonly limits = new Map<string, { retryAfterS: number; remaining: number }>();
  private readonly stalls = new Map<string, { until: Promise<void>; reached: () => void }>();
  private server!: Server;
  private base = '';

  constructor(o: FakeSlackOptions = {}) {
    this.clientId = o.clientId ?? '1111.2222';
    this.clientSecret = o.clientSecret ?? 'fake-client-secret';
    this.signingSecret = o.signingSecret ?? 'fake-signing-secret';
    this.appToken = o.appToken ?? `xapp-1-${randomBytes(6).toString('hex')}`;
    this.tokens.set(this.appToken, {
      token: this.appToken,
      kind: 'app',
      teamId: '',
      scopes: ['connections:write'],
      revoked: false,
    });
    this.socket = new FakeSocketMode(this);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.route(req, res));
    this.server.on('upgrade', (req, sock, head) => this.socket.upgrade(req, sock, head));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.stalls.keys()) this.release(s);
    await this.socket.close();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  get apiUrl(): string {
    return `${this.base}/api/`;
  }
  get authorizeUrl(): string {
    return `${this.base}/oauth/v2/authorize`;
  }
  socketUrl(): string {
    return this.socket.issueUrl(this.base.replace('http:', 'ws:'));
  }

  addTeam(t: { id?: string; name?: string; scopes?: string[]; rotationExpiresInS?: number } = {}): FakeTeam {
    const id = t.id ?? randomId('T');
    const team: FakeTeam = {
      id,
      name: t.name ?? `team-${id.toLowerCase()}`,
      botUserId: `UB${id}`,
      botId: `BB${id}`,
      channels: new Map(),
      grantScopes: t.scopes,
      rotationExpiresInS: t.rotationExpiresInS,
    };
    this.teams.set(id, team);
    return team;
  }

  team(id: string): FakeTeam {
    const t = this.teams.get(id);
    if (!t) throw new Error(`fake slack: no team ${id}`);
    return t;
  }

  addChannel(
    teamId: string,
    c: { id?: string; name?: string; type?: ChannelType; member?: boolean; historyError?: string } = {},
  ): FakeChannel {
    const type = c.type ?? 'channel';
    const id = c.id ?? randomId(type === 'im' ? 'D' : type === 'channel' ? 'C' : 'G');
    const ch: FakeChannel = {
      id,
      name: c.name ?? id.toLowerCase(),
      type,
      member: c.member ?? true,
      messages: [],
      historyError: c.historyError,
    };
    this.team(teamId).channels.set(id, ch);
    return ch;
  }

  /** The next authorize request is approved for this team (or denied). */
  setConsent(teamId: string, opts: { deny?: boolean } = {}): void {
    this.consent = { teamId, ...opts };
  }

  /** The next `times` calls of `method` answer HTTP 429 with Retry-After. */
  rateLimit(method: string, retryAfterS: number, times = 1): void {
    this.limits.set(method, { retryAfterS, remaining: times });
  }

  /** Holds every call of `method` until `release`; `reached` resolves when one is held. */
  stall(method: string): Stall {
    let release!: () => void;
    let reached!: () => void;
    const until = new Promise<void>((r) => (release = r));
    const reachedP = new Promise<void>((r) => (reached = r));
    this.stalls.set(method, { until, reached });
    return {
      release: () => {
        this.stalls.delete(method);
        release();
      },
      reached: reachedP,
    };
  }

  private release(method: string): void {
    this.stalls.delete(method);
  }

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** POSTs one Events API delivery to the service, signed as asked; `retryNum` sets X-Slack-Retry-Num. */
  async deliver(
    teamId: string,
    event: Record<string, unknown>,
    o: { eventId?: string; retryNum?: number; signing?: Signing; signal?: AbortSignal } = {},
  ): Promise<Response> {
    if (!this.eventsUrl) throw new Error('fake slack: eventsUrl is not set');
    const body = JSON.stringify(eventEnvelope(this, teamId, event, o.eventId));
    const headers = signedHeaders(this.signingSecret, body, o.signing ?? 'valid');
    if (o.retryNum) {
      headers['x-slack-retry-num'] = String(o.retryNum);
      headers['x-slack-retry-reason'] = 'http_timeout';
    }
    return fetch(this.eventsUrl, { method: 'POST', headers, body, signal: o.signal });
  }

  /** Called by chat.postMessage: echo the bot's post back as Slack would. */
  onPosted(team: FakeTeam, ch: FakeChannel, msg: FakeMessage): void {
    if (!this.echo) return;
    const event = messageEvent(team, ch, msg);
    const send =
      this.echo === 'http'
        ? this.deliver(team.id, event).then(() => undefined)
        : this.socket.push(team.id, event).then(() => undefined);
    send.catch(() => undefined);
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.base);
    try {
      if (url.pathname === '/oauth/v2/authorize') return await this.authorize(req, url, res);
      const m = /^\/api\/([a-zA-Z0-9.]+)$/.exec(url.pathname);
      if (req.method !== 'POST' || !m) return send(res, 404, { ok: false, error: 'unknown_method' });
      const method = m[1]!;
      const at = Date.now();
      const params = await readParams(req);
      const stall = this.stalls.get(method);
      if (stall) {
        stall.reached();
        await stall.until;
      }
      const limit = this.limits.get(method);
      if (limit && limit.remaining > 0) {
        limit.remaining--;
        this.calls.push({ method, at, params: scrub(params), status: 429 });
        return send(res, 429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(limit.retryAfterS) });
      }
      const auth = req.headers.authorization ?? '';
      const bearer = /^Bearer (.+)$/.exec(auth)?.[1] ?? null;
      const basicRaw = /^Basic (.+)$/.exec(auth)?.[1];
      const basic = basicRaw ? splitBasic(basicRaw) : null;
      const answer = callMethod(this, method, params, bearer, basic);
      this.calls.push({
        method,
        at,
        params: scrub(params),
        status: answer.status ?? 200,
        error: answer.body.ok ? undefined : String(answer.body.error),
      });
      return send(res, answer.status ?? 200, answer.body, answer.headers);
    } catch (err) {
      return send(res, 500, { ok: false, error: 'fatal_error', detail: String(err) });
    }
  }

  /** Slack's authorize step: a consent page for a browser, else the redirect at once (slack-authorize.ts). */
  private async authorize(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const post = req.method === 'POST';
    const params = post ? new URLSearchParams(await readParams(req)) : url.searchParams;
    const r = authorizeRequest(params);
    if (!r || r.clientId !== this.clientId) return send(res, 400, { ok: false, error: 'invalid_client_id' });
    const consent = this.consent;
    if (post) return grant(this, r, params.get('decision') === 'allow' && consent ? consent.teamId : null, res);
    if (wantsPage(req) && consent) return consentPage(r, this.team(consent.teamId), res);
    return grant(this, r, consent && !consent.deny ? consent.teamId : null, res);
  }
}
