/**
 * edge: the chat events route with the durable publish as a port (INTERFACE §3
 * `chatapp/events`: 200 only once the event is stored; §2 `unavailable` 503). A publish
 * that rejects or never settles is answered 503 within the intake's budget, before Slack's
 * 3 s give up, and leaves no "seen" mark, so Slack's retry is published, once.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IngestEvent, KvPort } from '../../src/runtime/ports.js';
import { EVENTS_PATH, chatEventsRoute } from '../../src/edge/routes/chatapp/events.js';
import { Unavailable } from '../../src/errors.js';
import { claimWorkspace } from '../../src/store/chat-claims.js';
import { createPool } from '../../src/store/db.js';
import { createInstall } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { signedHeaders } from '../fakes/slack-events.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';
import { edgeFixture } from './support.js';

const SECRET = 'edge-signing-secret';

/** The dedup KV bucket, in memory. */
function memoryKv(): KvPort & { keys(): string[] } {
  const m = new Map<string, { value: Uint8Array; revision: number }>();
  let rev = 0;
  return {
    keys: () => [...m.keys()],
    get: async (k) => m.get(k) ?? null,
    async create(k, value) {
      if (m.has(k)) return null;
      m.set(k, { value, revision: ++rev });
      return rev;
    },
    async update(k, value, revision) {
      if (m.get(k)?.revision !== revision) return null;
      m.set(k, { value, revision: ++rev });
      return rev;
    },
    async put(k, value) {
      m.set(k, { value, revision: ++rev });
      return rev;
    },
    async delete(k) {
      m.delete(k);
    },
  };
}

const pool = createPool(testDatabaseUrl(), { max: 2 });
const dedup = memoryKv();
/** What the route's publish does right now; every call is recorded. */
let publishWith: (e: IngestEvent) => Promise<unknown> = async () => ({ seq: 1, duplicate: false });
const publishCalls: IngestEvent[] = [];
const published: IngestEvent[] = [];
let fx: Awaited<ReturnType<typeof edgeFixture>>;
let teamId: string;
let installId: string;

beforeAll(async () => {
  const route = chatEventsRoute({
    signingSecret: SECRET,
    log: pino({ level: 'silent' }),
    intake: {
      pool,
      log: pino({ level: 'silent' }),
      dedup,
      refreshInstall: async () => undefined,
      publish: async (e) => {
        publishCalls.push(e);
        const r = await publishWith(e);
        published.push(e);
        return r;
      },
    },
  });
  fx = await edgeFixture(undefined, [{ plugin: route }]);
  const t = await createTenant(pool, TEST_MASTER_KEY, 'intake');
  teamId = `T${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
  const install = await createInstall(pool, {
    tenantId: t.tenant_id,
    connectorId: 'chatapp',
    externalId: teamId,
    displayName: 'Intake workspace',
  });
  installId = install.install_id;
  await claimWorkspace(pool, { teamId, installId, tenantId: t.tenant_id });
});
afterAll(async () => {
  await fx?.close();
  await pool.end();
});

let tsN = 0;
function delivery(eventId: string, text: string) {
  const ts = `1700100000.${String(++tsN).padStart(6, '0')}`;
  const event = {
    type: 'message',
    channel: 'C0INTAKE',
    channel_type: 'channel',
    user: 'U0HUMAN',
    text,
    ts,
    event_ts: ts,
  };
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: teamId,
    api_app_id: 'A0FAKEAPP',
    event_id: eventId,
    event,
    event_time: 1_700_100_000,
  });
  return {
    id: `message:C0INTAKE:${ts}`,
    send: (retryNum?: number) =>
      fx.app.inject({
        method: 'POST',
        url: EVENTS_PATH,
        headers: {
          ...signedHeaders(SECRET, body, 'valid'),
          ...(retryNum ? { 'x-slack-retry-num': String(retryNum), 'x-slack-retry-reason': 'http_error' } : {}),
        },
        payload: body,
      }),
  };
}

describe('edge: chat events route when the publish fails', () => {
  it.each([
    ['never settles', () => new Promise<never>(() => undefined)],
    ['rejects', () => Promise.reject(new Unavailable('JetStream did not acknowledge the event; retry'))],
  ] as const)('a publish that %s answers 503 unavailable; the retry is published once', async (label, failing) => {
    const eventId = `EvFAIL${label.replace(/\W/g, '')}`;
    const d = delivery(eventId, `publish ${label}`);
    const callsBefore = publishCalls.length;
    publishWith = failing;
    try {
      // A publish that never settles is answered only by the intake's budget: no clock needed to tell.
      const res = await d.send();
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('unavailable');
    } finally {
      publishWith = async () => ({ seq: 1, duplicate: false });
    }
    expect(publishCalls.length - callsBefore).toBe(1);
    expect(published.some((e) => e.id === d.id)).toBe(false);
    // No "seen" mark for an event that was not stored: Slack's retry must reach the stream.
    expect(dedup.keys().filter((k) => k.includes(eventId))).toEqual([]);
    expect((await d.send(1)).statusCode).toBe(200);
    expect((await d.send(2)).statusCode).toBe(200);
    expect(published.filter((e) => e.id === d.id)).toHaveLength(1);
    expect(published.find((e) => e.id === d.id)).toMatchObject({ installId, connectorId: 'chatapp', kind: 'message' });
  });
});
