/**
 * The fake GitHub's webhook sender and its delivery log (INTERFACE §9.4): it signs and
 * POSTs each webhook to the App's webhook URL as GitHub does (`X-GitHub-Event`,
 * `X-GitHub-Delivery`, `X-Hub-Signature-256`), never retries, and records every attempt
 * (status code 0 when the connection failed). It serves GitHub's App routes over that
 * log: `GET /app/hook/deliveries` (newest first, `cursor` pagination in the Link header)
 * and `POST /app/hook/deliveries/{id}/attempts` (a redelivery: same guid, new id).
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Reply } from './github-repos.js';

export interface SentDelivery {
  id: number;
  guid: string;
  event: string;
  action: string | null;
  installation_id: number | null;
  delivered_at: string;
  redelivery: boolean;
  /** 0: the connection failed (refused, reset, timed out). */
  status_code: number;
  duration: number;
  body: string;
}

/** GitHub gives up on a delivery after 10 s. */
const DELIVERY_TIMEOUT_MS = 10_000;

export class FakeHooks {
  /** Where webhooks go; null: nowhere configured (sending throws). */
  target: { url: string; secret: string } | null = null;
  readonly deliveries: SentDelivery[] = [];
  /** Redeliveries requested through the API, by delivery id. */
  readonly redeliveryRequests: number[] = [];
  private nextId = 90_000_000 + Math.floor(Math.random() * 1_000_000) * 10;

  /** Deliver a new webhook once; resolves with the recorded attempt. */
  send(event: string, payload: Record<string, unknown>): Promise<SentDelivery> {
    return this.attempt(event, JSON.stringify(payload), randomUUID(), false);
  }

  /**
   * Log an attempt that GitHub saw fail without the receiver knowing (it timed out waiting
   * for an answer the receiver did send): recorded with status 0, nothing sent.
   */
  recordTimedOut(event: string, payload: Record<string, unknown>, guid: string): SentDelivery {
    const d: SentDelivery = {
      id: this.nextId++,
      guid,
      event,
      action: typeof payload.action === 'string' ? payload.action : null,
      installation_id: (payload.installation as { id?: number } | undefined)?.id ?? null,
      delivered_at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      redelivery: false,
      status_code: 0,
      duration: 10,
      body: JSON.stringify(payload),
    };
    this.deliveries.push(d);
    return d;
  }

  byGuid(guid: string): SentDelivery[] {
    return this.deliveries.filter((d) => d.guid === guid);
  }

  route(method: string, url: URL, baseUrl: string): Reply | null {
    if (method === 'GET' && url.pathname === '/app/hook/deliveries') return this.list(url, baseUrl);
    const m = /^\/app\/hook\/deliveries\/(\d+)\/attempts$/.exec(url.pathname);
    if (method === 'POST' && m) {
      const d = this.deliveries.find((x) => x.id === Number(m[1]));
      if (!d) return { status: 404, body: { message: 'Not Found' } };
      this.redeliveryRequests.push(d.id);
      const payload = JSON.parse(d.body) as Record<string, unknown>;
      // GitHub answers 202 at once and delivers afterwards.
      setImmediate(() => void this.attempt(d.event, JSON.stringify(payload), d.guid, true));
      return { status: 202, body: {} };
    }
    return null;
  }

  private list(url: URL, baseUrl: string): Reply {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30) || 30));
    const cursor = url.searchParams.get('cursor');
    const before = cursor === null ? Number.POSITIVE_INFINITY : Number(Buffer.from(cursor, 'base64url').toString());
    const newestFirst = [...this.deliveries].sort((a, b) => b.id - a.id).filter((d) => d.id < before);
    const page = newestFirst.slice(0, perPage);
    const headers: Record<string, string> = {};
    if (newestFirst.length > perPage) {
      const next = Buffer.from(String(page[page.length - 1]!.id)).toString('base64url');
      headers.link = `<${baseUrl}/app/hook/deliveries?per_page=${perPage}&cursor=${next}>; rel="next"`;
    }
    const body = page.map(({ body: _body, ...d }) => ({
      ...d,
      status:
        d.status_code === 0
          ? 'failed to connect'
          : d.status_code < 300
            ? 'OK'
            : `Invalid HTTP Response: ${d.status_code}`,
      repository_id: null,
      throttled_at: null,
    }));
    return { status: 200, body, headers };
  }

  private async attempt(event: string, body: string, guid: string, redelivery: boolean): Promise<SentDelivery> {
    if (this.target === null) throw new Error('FakeHooks: no webhook target configured');
    const payload = JSON.parse(body) as { action?: unknown; installation?: { id?: unknown } };
    const started = Date.now();
    const d: SentDelivery = {
      id: this.nextId++,
      guid,
      event,
      action: typeof payload.action === 'string' ? payload.action : null,
      installation_id: typeof payload.installation?.id === 'number' ? payload.installation.id : null,
      delivered_at: new Date(started).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      redelivery,
      status_code: 0,
      duration: 0,
      body,
    };
    try {
      const res = await fetch(this.target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/044aadd',
          'x-github-event': event,
          'x-github-delivery': guid,
          'x-github-hook-installation-target-type': 'integration',
          'x-hub-signature-256': `sha256=${createHmac('sha256', this.target.secret).update(body).digest('hex')}`,
        },
        body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      await res.arrayBuffer().catch(() => undefined);
      d.status_code = res.status;
    } catch {
      d.status_code = 0;
    }
    d.duration = (Date.now() - started) / 1000;
    this.deliveries.push(d);
    return d;
  }
}
