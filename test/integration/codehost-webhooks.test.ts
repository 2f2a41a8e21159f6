/**
 * Integration: GitHub webhooks in, on a real node (NATS JetStream + Postgres) against the
 * fake GitHub, with GitHub's recorded payloads: fan-out across tenants, a redelivery storm
 * stored once, forged signatures refused with nothing published, installation deleted /
 * suspended uninstalling locally, and the self-emit filters (spec §6.3) on the live path.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PR_SUMMARY_SENTINEL, SLASH_REPLY_SENTINEL } from '../../src/connectors/codehost/sentinels.js';
import {
  examplePayload,
  forInstallation,
  sign,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { testNatsUrl } from '../support/env.js';
import { scrapeSample } from '../support/metrics.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
let nc: NatsConnection;
type Tenant = Awaited<ReturnType<CodehostHarness['tenant']>>;
let a: Tenant;
let b: Tenant;
const X = 5_100_000 + Math.floor(Math.random() * 1000);
const Y = X + 2000;
let xa: string;
let xb: string;
let ya: string;

beforeAll(async () => {
  h = await startCodehostHarness();
  nc = await connect({ servers: testNatsUrl() });
  a = await h.tenant('a');
  b = await h.tenant('b');
  xa = await h.install(a, X);
  xb = await h.install(b, X);
  ya = await h.install(a, Y);
});
afterAll(async () => {
  await nc?.close();
  await h?.stop();
});

const lastSeq = async () =>
  (await (await jetstreamManager(nc)).streams.info(`${h.node.namespace}_INGEST`)).state.last_seq;

async function stored(t: Tenant, installId: string, id: string) {
  const res = await h.api(`/api/v1/connectors/installs/${installId}/events?limit=500`, t);
  const { events } = (await res.json()) as {
    events: Array<{ id: string; kind: string; connector_id: string; payload: unknown }>;
  };
  return events.filter((e) => e.id === id);
}

describe('codehost webhooks: in, fanned out, once', () => {
  it('ping answers 200 {"ok": true} and stores nothing', async () => {
    const res = await h.deliver('ping', examplePayload('ping'));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('one delivery reaches every active install bound to installation.id, one per tenant, as delivered', async () => {
    const payload = forInstallation(examplePayload('pull_request', 'closed'), X);
    const delivery = randomUUID();
    const res = await h.deliver('pull_request', payload, { delivery });
    expect(res.status).toBe(202);
    const inA = await until('A stores it', async () => (await stored(a, xa, delivery))[0]);
    const inB = await until('B stores it', async () => (await stored(b, xb, delivery))[0]);
    for (const e of [inA, inB]) {
      expect(e).toMatchObject({ id: delivery, kind: 'pull_request.closed', connector_id: 'codehost' });
      expect(e.payload).toEqual(payload);
    }
    expect(await stored(a, ya, delivery)).toEqual([]);
  });

  it('push (no action) is stored under the bare event name', async () => {
    const delivery = randomUUID();
    expect(
      (await h.deliver('push', forInstallation(examplePayload('push', undefined, 3), Y), { delivery })).status,
    ).toBe(202);
    const e = await until('push stored', async () => (await stored(a, ya, delivery))[0]);
    expect(e.kind).toBe('push');
  });

  it('a redelivery storm (same X-GitHub-Delivery) is acknowledged every time and stored once', async () => {
    const delivery = randomUUID();
    const payload = forInstallation(examplePayload('issues', 'opened'), Y);
    const answers = await Promise.all(Array.from({ length: 25 }, () => h.deliver('issues', payload, { delivery })));
    expect(answers.map((r) => r.status)).toEqual(Array(25).fill(202));
    // A marker delivered afterwards is stored after it (events of one install are in order).
    const marker = randomUUID();
    await h.deliver('issues', forInstallation(examplePayload('issues', 'reopened'), Y), { delivery: marker });
    await until('marker stored', async () => (await stored(a, ya, marker))[0]);
    expect(await stored(a, ya, delivery)).toHaveLength(1);
  });

  it('a tenant that installs an installation already delivering gets its very next delivery', async () => {
    const warm = await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), X));
    expect(await warm.json()).toMatchObject({ installs: 2 });
    // The fan-out list of X is now cached on the node; installing drops it before the 201.
    const c = await h.tenant('c');
    const xc = await h.install(c, X);
    const delivery = randomUUID();
    const res = await h.deliver('issues', forInstallation(examplePayload('issues', 'reopened'), X), { delivery });
    expect(await res.json()).toEqual({ ok: true, installs: 3 });
    await until('C stores it', async () => (await stored(c, xc, delivery))[0]);
  });

  it('forged or missing signatures answer 401 and publish nothing', async () => {
    const payload = forInstallation(examplePayload('issues', 'opened'), X);
    const raw = JSON.stringify(payload);
    const before = await lastSeq();
    const good = sign(h.secret, raw);
    const forged: Array<string | null> = [
      null,
      '',
      sign('wrong-secret', raw),
      sign(h.secret, `${raw} `),
      good.toUpperCase(),
      good.slice(0, -2),
      `sha1=${good.slice(7, 47)}`,
      `${good}00`,
    ];
    for (const signature of forged) {
      const res = await h.deliver('issues', payload, { signature, raw });
      expect(res.status, String(signature)).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    expect(await lastSeq()).toBe(before);
  });
});

describe('codehost webhooks: installation deleted or suspended', () => {
  it('deleted uninstalls, suspend suspends (INTERFACE §9.4) every install of the installation; both refuse emits', async () => {
    for (const action of ['deleted', 'suspend'] as const) {
      const id = X + (action === 'deleted' ? 10 : 11);
      const one = await h.install(a, id);
      const two = await h.install(b, id);
      const res = await h.deliver('installation', forInstallation(examplePayload('installation', action), id));
      expect(res.status).toBe(202);
      // The next delivery of that installation reaches no install.
      const next = await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), id));
      expect(await next.json()).toEqual({ ok: true, installs: 0 });
      for (const [t, installId] of [
        [a, one],
        [b, two],
      ] as const) {
        const install = (await (await h.api(`/api/v1/connectors/installs/${installId}`, t)).json()) as {
          status: string;
        };
        expect(install.status).toBe(action === 'deleted' ? 'uninstalled' : 'suspended');
        const emit = await h.api(`/api/v1/connectors/installs/${installId}/emit`, t, {
          body: { kind: 'codehost.issue_comment', body: { repo_full_name: 'o/r', issue_number: 1, body: 'hi' } },
        });
        expect(emit.status).toBe(409);
        expect(((await emit.json()) as { error: { code: string } }).error.code).toBe('install_not_active');
      }
      const creds = await h.node.pool.query(
        'SELECT count(*)::int AS n FROM credentials WHERE install_id = ANY($1) AND revoked_at IS NULL',
        [[one, two]],
      );
      // A suspended install keeps its credentials for the unsuspend.
      expect(creds.rows[0].n).toBe(action === 'deleted' ? 0 : 2);
      expect(h.gh.callsTo('DELETE', /^\/app\/installations/)).toHaveLength(0);
    }
  });
});

describe('codehost self-emit filters on the live path (spec §6.3)', () => {
  it('drops Bot issue comments, sentinel comments and this install’s own comment ids; keeps the rest', async () => {
    const t = await h.tenant('self');
    const id = X + 20;
    const installId = await h.install(t, id);
    const comment = (extra: Record<string, unknown>, sender = 'User') => {
      const p = forInstallation(examplePayload('issue_comment', 'created'), id) as {
        comment: Record<string, unknown>;
        sender: Record<string, unknown>;
      };
      return {
        ...p,
        comment: { ...p.comment, id: Math.floor(Math.random() * 1e9), ...extra },
        sender: { ...p.sender, type: sender },
      };
    };
    const emitted = await h.api(`/api/v1/connectors/installs/${installId}/emit`, t, {
      body: {
        kind: 'codehost.issue_comment',
        body: { repo_full_name: 'Codertocat/Hello-World', issue_number: 1, body: 'from the graph' },
      },
    });
    expect(emitted.status).toBe(200);
    const ownId = Number(((await emitted.json()) as { provider_id: string }).provider_id);

    const review = forInstallation(examplePayload('pull_request_review_comment', 'created'), id) as {
      comment: Record<string, unknown>;
    };
    const droppedSoFar = (tier: string) =>
      scrapeSample(h.node.url, 'connector_service_ingest_dropped_total', { connector: 'codehost', tier });
    const before = { tier1: await droppedSoFar('1'), tier2: await droppedSoFar('2') };
    const dropped = {
      bot: await send('issue_comment', comment({ body: 'a bot wrote this' }, 'Bot')),
      summary: await send('issue_comment', comment({ body: `${PR_SUMMARY_SENTINEL}\nsummary` })),
      slash: await send('issue_comment', comment({ body: `${SLASH_REPLY_SENTINEL}\nreply` })),
      reviewSentinel: await send('pull_request_review_comment', {
        ...review,
        comment: { ...review.comment, body: `quoted ${PR_SUMMARY_SENTINEL}` },
      }),
      // Tier 2: our comment re-attributed to a user, sentinel stripped by a mirror.
      ownId: await send('issue_comment', comment({ id: ownId, body: 'from the graph' })),
    };
    const kept = await send('issue_comment', comment({ body: 'a person wrote this' }));
    await until('kept comment stored', async () => (await stored(t, installId, kept))[0]);
    for (const [what, delivery] of Object.entries(dropped))
      expect(await stored(t, installId, delivery), what).toEqual([]);
    // INTERFACE §8.20: each drop is counted. One install's events commit in order, so the
    // kept comment being stored means every drop sent before it has been counted.
    expect((await droppedSoFar('1')) - before.tier1).toBe(4);
    expect((await droppedSoFar('2')) - before.tier2).toBe(1);

    async function send(event: string, payload: unknown): Promise<string> {
      const delivery = randomUUID();
      expect((await h.deliver(event, payload, { delivery })).status).toBe(202);
      return delivery;
    }
  });
});
