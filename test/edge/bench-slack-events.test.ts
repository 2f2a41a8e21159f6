/**
 * edge: the bench's Slack traffic (bench/ingest/route-traffic.ts) is accepted by the real
 * events route (INTERFACE §3 `chatapp/events`) on a real ingest stream: 200 for every
 * request, one stored message each, published for the seeded chat install of its team with
 * the id the bench counts by. A request under another secret is refused, so the bench
 * cannot measure 401s as throughput unnoticed.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedChatInstalls } from '../../bench/ingest/bench-db.js';
import { slackTraffic } from '../../bench/ingest/route-traffic.js';
import { ClaimedInstallsCache } from '../../src/connectors/chatapp/claimed-installs-cache.js';
import { chatEventsRoute } from '../../src/edge/routes/chatapp/events.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames } from '../../src/runtime/names.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { findClaimedInstall } from '../../src/store/chat-claims.js';
import { createPool } from '../../src/store/db.js';
import { freshNamespace, TEST_MASTER_KEY, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { edgeFixture } from '../support/edge.js';

const SECRET = 'bench-events-signing-secret';
const pool = createPool(testDatabaseUrl(), { max: 3 });
const names = makeNames(freshNamespace('benchslack'));
const published: IngestEvent[] = [];
let nc: NatsConnection;
let jsm: JetStreamManager;
let fx: Awaited<ReturnType<typeof edgeFixture>>;
let teams: { installId: string; teamId: string }[];

beforeAll(async () => {
  nc = await connect({ servers: testNatsUrl() });
  jsm = await jetstreamManager(nc);
  await ensureIngestStream(jsm, names);
  const publisher = new IngestPublisher({
    js: jetstream(nc),
    names,
    shards: 4,
    blobs: { put: async () => 'unused', get: async () => null, delete: async () => undefined },
    maxPayload: nc.info!.max_payload,
  });
  const suffix = Math.random().toString(36).slice(2, 8).toUpperCase();
  teams = await seedChatInstalls(pool, TEST_MASTER_KEY, [`TBENCH${suffix}A`, `TBENCH${suffix}B`]);
  const route = chatEventsRoute({
    signingSecret: SECRET,
    log: pino({ level: 'silent' }),
    intake: {
      pool,
      log: pino({ level: 'silent' }),
      installs: new ClaimedInstallsCache({ find: (team) => findClaimedInstall(pool, team) }),
      refreshInstall: async () => undefined,
      publish: (e) => {
        published.push(e);
        return publisher.publish(e);
      },
    },
  });
  fx = await edgeFixture(undefined, [{ plugin: route }]);
});
afterAll(async () => {
  await fx?.close();
  await jsm?.streams.delete(names.ingestStream).catch(() => undefined);
  await nc?.drain();
  await pool.end();
});

describe('edge: the ingest bench Slack traffic', () => {
  it('is answered 200 and stored once per request, for its team, under the run prefix', async () => {
    const traffic = slackTraffic(
      SECRET,
      teams.map((t) => t.teamId),
    );
    const prefix = 'sedge1i2s-';
    const n = 40;
    for (let i = 0; i < n; i++) {
      const d = traffic.request(i, prefix);
      const res = await fx.app.inject({ method: 'POST', url: traffic.path, headers: d.headers, payload: d.body });
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(published).toHaveLength(n);
    expect(published.every((e) => e.id.startsWith(traffic.idPrefix(prefix)) && e.kind === 'message')).toBe(true);
    expect(new Set(published.map((e) => e.id)).size).toBe(n);
    // Round-robin over the teams: each install gets half.
    for (const t of teams) expect(published.filter((e) => e.installId === t.installId)).toHaveLength(n / 2);
    expect((await jsm.streams.info(names.ingestStream)).state.messages).toBe(n);
  });

  it('is refused (401) when signed with another secret', async () => {
    const d = slackTraffic(`${SECRET}x`, [teams[0]!.teamId]).request(0, 'refused-');
    const res = await fx.app.inject({
      method: 'POST',
      url: '/api/v1/connectors/chatapp/events',
      headers: d.headers,
      payload: d.body,
    });
    expect(res.statusCode).toBe(401);
  });
});
