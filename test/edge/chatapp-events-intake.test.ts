/**
 * edge: the chat events route against a real ingest stream (INTERFACE §3
 * `chatapp/events`: 200 only once the event is stored; §2 `unavailable` 503). A publish
 * that rejects or never settles is answered 503 within the intake's budget, before Slack's
 * 3 s give up. With no dedup key of its own (issue 12, item 2), a retry of an accepted event
 * is a JetStream duplicate (`Nats-Msg-Id`), never a second message. The team's install
 * comes from a cache that hears install changes: a just-installed workspace is found, an
 * uninstalled one is dropped.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { EVENTS_PATH, chatEventsRoute } from '../../src/edge/routes/chatapp/events.js';
import { ClaimedInstallsCache, hearChatInstallChanges } from '../../src/connectors/chatapp/claimed-installs-cache.js';
import { Unavailable } from '../../src/errors.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { claimWorkspace, findClaimedInstall, releaseClaim } from '../../src/store/chat-claims.js';
import { createPool, withTx } from '../../src/store/db.js';
import { createInstall, setInstallStatus } from '../../src/store/installs.js';
import { createTenant } from '../../src/store/tenants.js';
import { signedHeaders } from 'connector-service/testing';
import { freshNamespace, TEST_MASTER_KEY, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { until } from '../support/until.js';
import { edgeFixture } from '../support/edge.js';

const SECRET = 'edge-signing-secret';

const pool = createPool(testDatabaseUrl(), { max: 3 });
const names = makeNames(freshNamespace('chatin'));
let nc: NatsConnection;
let jsm: JetStreamManager;
let publisher: IngestPublisher;
/** What the route's publish does right now (by default the real one); every call is recorded. */
let publishWith: (e: IngestEvent) => Promise<unknown> = (e) => publisher.publish(e);
const publishCalls: IngestEvent[] = [];
const acks: Array<{ id: string; duplicate: boolean }> = [];
let fx: Awaited<ReturnType<typeof edgeFixture>>;
let tenantId: string;
let teamId: string;
let installId: string;
const installs = new ClaimedInstallsCache({ find: (team) => findClaimedInstall(pool, team), ttlMs: 3_600_000 });
let hearing: { stop(): Promise<void> } | undefined;

const streamMessages = async () => (await jsm.streams.info(names.ingestStream)).state.messages;

async function installWorkspace(team: string): Promise<string> {
  const install = await createInstall(pool, {
    tenantId,
    connectorId: 'chatapp',
    externalId: team,
    displayName: 'Intake workspace',
  });
  await claimWorkspace(pool, { teamId: team, installId: install.install_id, tenantId });
  return install.install_id;
}

beforeAll(async () => {
  nc = await connect({ servers: testNatsUrl() });
  jsm = await jetstreamManager(nc);
  await ensureIngestStream(jsm, names);
  publisher = new IngestPublisher({
    js: jetstream(nc),
    names,
    shards: 1,
    blobs: { put: async () => 'unused', get: async () => null, delete: async () => undefined },
    maxPayload: nc.info!.max_payload,
  });
  hearing = hearChatInstallChanges(pool, pino({ level: 'silent' }), installs);
  const route = chatEventsRoute({
    signingSecret: SECRET,
    log: pino({ level: 'silent' }),
    intake: {
      pool,
      log: pino({ level: 'silent' }),
      installs,
      refreshInstall: async () => undefined,
      publish: async (e) => {
        publishCalls.push(e);
        const r = (await publishWith(e)) as { duplicate: boolean };
        acks.push({ id: e.id, duplicate: r.duplicate });
        return r;
      },
    },
  });
  fx = await edgeFixture(undefined, [{ plugin: route }]);
  tenantId = (await createTenant(pool, TEST_MASTER_KEY, 'intake')).tenant_id;
  teamId = `T${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
  installId = await installWorkspace(teamId);
  await until('hearing install changes', async () => installs.listening);
});
afterAll(async () => {
  await fx?.close();
  await hearing?.stop();
  await jsm?.streams.delete(names.ingestStream).catch(() => undefined);
  await nc?.drain();
  await pool.end();
});

let tsN = 0;
function delivery(eventId: string, text: string, team = teamId) {
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
    team_id: team,
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
  ] as const)('a publish that %s answers 503 unavailable; the retries are stored once', async (label, failing) => {
    const eventId = `EvFAIL${label.replace(/\W/g, '')}`;
    const d = delivery(eventId, `publish ${label}`);
    const callsBefore = publishCalls.length;
    const before = await streamMessages();
    publishWith = failing;
    try {
      // A publish that never settles is answered only by the intake's budget: no clock needed to tell.
      const res = await d.send();
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('unavailable');
    } finally {
      publishWith = (e) => publisher.publish(e);
    }
    expect(publishCalls.length - callsBefore).toBe(1);
    expect(await streamMessages()).toBe(before);
    // Slack's retries reach the stream; the second is JetStream's duplicate, not a second message.
    expect((await d.send(1)).statusCode).toBe(200);
    expect((await d.send(2)).statusCode).toBe(200);
    expect(acks.filter((a) => a.id === d.id)).toEqual([
      { id: d.id, duplicate: false },
      { id: d.id, duplicate: true },
    ]);
    expect(await streamMessages()).toBe(before + 1);
    expect(publishCalls.find((e) => e.id === d.id)).toMatchObject({
      installId,
      connectorId: 'chatapp',
      kind: 'message',
    });
  });
});

describe('edge: chat events without a dedup key of their own', () => {
  it('a retry of an accepted event is a stream duplicate: one message, every answer 200', async () => {
    const d = delivery('EvRETRY1', 'retried after a slow answer');
    const before = await streamMessages();
    for (const retry of [undefined, 1, 2, 3]) expect((await d.send(retry)).statusCode).toBe(200);
    expect(acks.filter((a) => a.id === d.id).map((a) => a.duplicate)).toEqual([false, true, true, true]);
    expect(await streamMessages()).toBe(before + 1);
  });

  it('a workspace installed after an event of it was dropped gets its next event (no "no install" is kept)', async () => {
    const team = `T${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
    const first = delivery('EvEARLY', 'before the install', team);
    const callsBefore = publishCalls.length;
    expect((await first.send()).statusCode).toBe(200);
    expect(publishCalls.length).toBe(callsBefore);
    const newInstall = await installWorkspace(team);
    const next = delivery('EvAFTER', 'after the install', team);
    expect((await next.send()).statusCode).toBe(200);
    expect(publishCalls.find((e) => e.id === next.id)).toMatchObject({ installId: newInstall });
  });

  it('an uninstall written elsewhere is heard: the cached install is no longer published to', async () => {
    const team = `T${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
    const id = await installWorkspace(team);
    const cached = delivery('EvCACHED', 'cached install', team);
    expect((await cached.send()).statusCode).toBe(200);
    expect(publishCalls.find((e) => e.id === cached.id)).toMatchObject({ installId: id });
    expect(installs.size).toBeGreaterThan(0);
    // As another node would: straight to the database, nothing said to this edge.
    await withTx(pool, async (tx) => {
      await setInstallStatus(tx, id, 'uninstalled');
      await releaseClaim(tx, id);
    });
    await until('the announcement forgot the cached install', async () => installs.size === 0);
    const later = delivery('EvLATER', 'after the uninstall', team);
    const callsBefore = publishCalls.length;
    expect((await later.send()).statusCode).toBe(200);
    expect(publishCalls.length).toBe(callsBefore);
  });
});
