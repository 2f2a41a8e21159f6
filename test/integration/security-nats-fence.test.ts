/**
 * The NATS fence (INTERFACE §9.4) on a real node: something that can publish on the
 * deployment's subjects but does not hold the master key can neither inject an ingest
 * event nor ask an install actor to emit or uninstall; and even a sealed message naming
 * another tenant's install is refused by the install actor. Every refusal is counted on
 * /metrics (`connector_service_nats_refused_total{path}`). A refused ingest message is ended
 * once, in a form nats-server 2.9.10 reads: it leaves the stream, is never redelivered, and is
 * logged once per subject (issue 32). The flood of the same is security-nats-flood.test.ts.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeIngestMessage } from '../../src/ingest/message.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { installKey, installWritesKey } from '../../src/actors/install-protocol.js';
import { names as makeNames, shardOf, type Names } from '../../src/runtime/names.js';
import { Router } from '../../src/runtime/router.js';
import { createSeal } from '../../src/runtime/seal.js';
import { createInstall, getInstallById, setBackfill, type Install } from '../../src/store/installs.js';
import { pgBlobPort } from '../../src/store/runtime-ports.js';
import { TEST_MASTER_KEY, testNatsUrl } from '../support/env.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { startTestNode, type TestNode } from '../support/node.js';
import { until } from '../support/until.js';

let node: TestNode;
let names: Names;
let outsider: NatsConnection;
const log = pino({ level: 'silent' });
const logs = new LogCapture();

beforeAll(async () => {
  node = await startTestNode({}, undefined, { logs });
  names = makeNames(node.namespace);
  // A client of the same NATS account, as any process holding the deployment's NATS access is.
  outsider = await connect({ servers: testNatsUrl() });
});
afterAll(async () => {
  await outsider?.close();
  await node?.stop();
});

async function refused(path: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`connector_service_nats_refused_total{path="${path}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}
/** A node's refusals and stores come through NATS and Postgres: a generous bound. */
const LONG = { timeoutMs: 20_000, everyMs: 50 };
async function chatInstall(tenantId: string, teamId: string): Promise<Install> {
  const inst = await createInstall(node.pool, { tenantId, connectorId: 'chatapp', externalId: teamId });
  await setBackfill(node.pool, inst.install_id, 'complete');
  return inst;
}
const message = (inst: Install, ts: string, tenantId = inst.tenant_id): IngestEvent => ({
  installId: inst.install_id,
  tenantId,
  connectorId: 'chatapp',
  id: `message:C1:${ts}`,
  kind: 'message',
  occurredAt: null,
  payload: { channel_id: 'C1', channel_type: 'channel', ts, user: 'U1', text: 'forged?' },
});
const stored = async (inst: Install, id: string) =>
  (await node.pool.query('SELECT 1 FROM events WHERE install_id = $1 AND id = $2', [inst.install_id, id])).rowCount;

describe('NATS fence', () => {
  it('refuses and counts an ingest message without the seal, and one naming another tenant', async () => {
    const victim = await chatInstall((await node.tenant('victim')).tenant_id, 'T0VICTIM');
    const other = await node.tenant('other');
    const sealed = new IngestPublisher({
      js: jetstream(outsider),
      names,
      shards: node.config.shards,
      blobs: pgBlobPort(node.pool),
      maxPayload: outsider.info!.max_payload,
      seal: createSeal([TEST_MASTER_KEY]),
    });
    const before = { ingest: await refused('ingest'), install: await refused('install_ingest') };

    // 1. Unsealed: straight onto the ingest subject, as a rogue client would.
    const forged = message(victim, '1700000001.000001');
    const subject = names.ingestSubject(
      shardOf(installKey(victim.install_id), node.config.shards),
      'chatapp',
      victim.install_id,
    );
    await jetstream(outsider).publish(subject, encodeIngestMessage(forged), { msgID: 'forged-1' });
    // 2. Sealed, but naming another tenant than the install's own.
    const crossed = message(victim, '1700000001.000002', other.tenant_id);
    await sealed.publish(crossed);
    // 3. Control: the same path with the right seal and tenant is stored.
    const genuine = message(victim, '1700000001.000003');
    await sealed.publish(genuine);

    await until('the genuine event stored', async () => (await stored(victim, genuine.id)) === 1, LONG);
    await until(
      'both refusals counted',
      async () =>
        (await refused('ingest')) === before.ingest + 1 && (await refused('install_ingest')) === before.install + 1,
      LONG,
    );
    expect(await stored(victim, forged.id)).toBe(0);
    expect(await stored(victim, crossed.id)).toBe(0);
    // Refused messages are not dead letters (a replay would launder them).
    const dl = await node.pool.query('SELECT 1 FROM dead_letters WHERE install_id = $1', [victim.install_id]);
    expect(dl.rowCount).toBe(0);
  });

  it('ends each refused ingest message once: gone from the stream, never redelivered, logged once a subject', async () => {
    const tenant = (await node.tenant('flooded')).tenant_id;
    const installs = await Promise.all(['T0F1', 'T0F2', 'T0F3'].map((team) => chatInstall(tenant, team)));
    const js = jetstream(outsider);
    const jsm = await jetstreamManager(outsider);
    const misSealed = new IngestPublisher({
      js,
      names,
      shards: node.config.shards,
      blobs: pgBlobPort(node.pool),
      maxPayload: outsider.info!.max_payload,
      seal: createSeal([`${TEST_MASTER_KEY}-guess`]),
    });
    const before = await refused('ingest');
    const seqs: number[] = [];
    const subjects = new Set<string>();
    for (const inst of installs) {
      const shard = shardOf(installKey(inst.install_id), node.config.shards);
      const subject = names.ingestSubject(shard, 'chatapp', inst.install_id);
      subjects.add(subject);
      for (const n of [1, 2]) {
        const unsealed = message(inst, `1700000002.00000${n}`);
        seqs.push(
          (await js.publish(subject, encodeIngestMessage(unsealed), { msgID: `${inst.install_id}:u${n}` })).seq,
        );
        await misSealed.publish(message(inst, `1700000003.00000${n}`));
      }
    }
    const total = installs.length * 4;
    await until('every refusal counted', async () => (await refused('ingest')) >= before + total, LONG);
    // Terminated in a form the server reads: a work-queue stream deletes the message.
    await until(
      'the unsealed messages gone from the stream',
      async () => {
        for (const seq of seqs) if ((await jsm.streams.getMessage(names.ingestStream, { seq })) !== null) return false;
        return true;
      },
      LONG,
    );
    for (let shard = 0; shard < node.config.shards; shard++) {
      const c = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard));
      expect({ shard, ackPending: c.num_ack_pending, redelivered: c.num_redelivered }).toEqual({
        shard,
        ackPending: 0,
        redelivered: 0,
      });
    }
    expect(await refused('ingest')).toBe(before + total);
    // One line per subject, not one per message (nor per redelivery).
    const named = logs
      .find('without a valid seal refused', LOG_LEVEL.warn)
      .filter((l) => subjects.has(l.subject as string));
    expect(named.map((l) => l.subject).sort()).toEqual([...subjects].sort());
  });

  it("refuses and counts actor requests without the seal, and a sealed one for another tenant's install", async () => {
    const victim = await chatInstall((await node.tenant('victim2')).tenant_id, 'T0VICTIM2');
    const attacker = await node.tenant('attacker');
    const rogue = new Router({ nc: outsider, names, shards: node.config.shards, log });
    const insider = new Router({
      nc: outsider,
      names,
      shards: node.config.shards,
      log,
      seal: createSeal([TEST_MASTER_KEY]),
    });
    const before = { actor: await refused('actor'), install: await refused('install_request') };
    const key = installKey(victim.install_id);
    const writesKey = installWritesKey(victim.install_id);

    const unsealed = await rogue
      .ask(key, { type: 'uninstall', tenantId: victim.tenant_id }, { timeoutMs: 10_000 })
      .catch((e: unknown) => e);
    expect(unsealed).toMatchObject({ code: 'unauthorized' });
    // A burst of them is counted one by one and logged once (one line per 10 s per shard, not per request).
    const burst = 20;
    const lineOf = () => logs.find('actor request without a valid seal refused', LOG_LEVEL.warn);
    const linesBefore = lineOf().length;
    for (let i = 0; i < burst; i++) {
      const e = await rogue
        .ask(key, { type: 'uninstall', tenantId: victim.tenant_id }, { timeoutMs: 10_000 })
        .catch((x: unknown) => x);
      expect(e).toMatchObject({ code: 'unauthorized' });
    }
    expect(lineOf().length - linesBefore).toBeLessThanOrEqual(1);
    const wrongKey = await new Router({
      nc: outsider,
      names,
      shards: node.config.shards,
      log,
      seal: createSeal([`${TEST_MASTER_KEY}-guess`]),
    })
      .ask(
        writesKey,
        { type: 'emit', tenantId: victim.tenant_id, kind: 'chatapp.message', body: {} },
        { timeoutMs: 10_000 },
      )
      .catch((e: unknown) => e);
    expect(wrongKey).toMatchObject({ code: 'unauthorized' });

    // What a rogue sender writes need not type-check: the last one names no tenant at all.
    const forged = [{ type: 'uninstall', tenantId: attacker.tenant_id }, { type: 'uninstall' }] as Array<{
      type: 'uninstall';
      tenantId: string;
    }>;
    for (const msg of forged) {
      const err = await insider.ask(key, msg, { timeoutMs: 10_000 }).catch((e: unknown) => e);
      expect(err, JSON.stringify(msg)).toMatchObject({ code: 'not_found' });
    }
    // Emits and health live in the install's write actor, fenced the same way.
    const forgedEmit = await insider
      .ask(
        writesKey,
        { type: 'emit', tenantId: attacker.tenant_id, kind: 'chatapp.message', body: { channel_id: 'C1', text: 'x' } },
        { timeoutMs: 10_000 },
      )
      .catch((e: unknown) => e);
    expect(forgedEmit).toMatchObject({ code: 'not_found' });
    expect(await refused('actor')).toBe(before.actor + 2 + burst);
    expect(await refused('install_request')).toBe(before.install + 3);
    expect((await getInstallById(node.pool, victim.install_id))!.status).toBe('active');
    // Control: the install's own tenant, sealed, is served.
    const health = await insider
      .ask(writesKey, { type: 'health', tenantId: victim.tenant_id }, { timeoutMs: 10_000 })
      .catch((e: unknown) => e);
    expect(health).not.toMatchObject({ code: 'not_found' });
    expect(health).not.toMatchObject({ code: 'unauthorized' });
  });
});
