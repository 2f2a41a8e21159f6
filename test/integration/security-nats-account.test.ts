/**
 * The shipped NATS account (deploy/nats/connectors-account.conf, README "Security model")
 * on a nats-server of its own: the runtime's whole NATS side (JetStream ingest stream and
 * shard consumers, every KV bucket, shard leases, actor request/reply, the change feed)
 * works as that account's user, and anything outside the namespace is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/free-port.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { NodeIngest } from '../../src/ingest/node-ingest.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import type { IngestEvent } from '../../src/runtime/ports.js';
import { names as makeNames, type Names } from '../../src/runtime/names.js';
import { openKv } from '../../src/runtime/nats.js';
import { openReplayBuckets, replayGuard } from '../../src/runtime/replay-guard.js';
import { Router } from '../../src/runtime/router.js';
import { createSeal } from '../../src/runtime/seal.js';
import { ShardHost } from '../../src/runtime/shard-host.js';
import { ShardManager } from '../../src/runtime/shard-manager.js';
import { TEST_MASTER_KEY, freshNamespace } from '../support/env.js';
import { until } from '../support/until.js';

const ACCOUNT = new URL('../../deploy/nats/connectors-account.conf', import.meta.url);
const log = pino({ level: 'silent' });
const namespace = freshNamespace('acct').replace(/-/g, '_');
let dir: string;
let server: ChildProcess;
let url: string;
let nc: NatsConnection;
let names: Names;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nats-account-'));
  // The shipped file is written for namespace `svc`; this run's namespace replaces it.
  const account = readFileSync(ACCOUNT, 'utf8')
    .replace(/"svc\.>"/g, `"${namespace}.>"`)
    .replace(/svc_/g, `${namespace}_`);
  writeFileSync(join(dir, 'connectors-account.conf'), account);
  const port = await freePort();
  writeFileSync(
    join(dir, 'server.conf'),
    `listen: 127.0.0.1:${port}\njetstream: { store_dir: "${join(dir, 'js')}" }\ninclude ./connectors-account.conf\n`,
  );
  server = spawn('nats-server', ['-c', join(dir, 'server.conf')], {
    env: { ...process.env, CONNECTORS_NATS_PASSWORD: 'account-test-pw' },
    stdio: 'ignore',
  });
  url = `nats://127.0.0.1:${port}`;
  nc = await until(
    'the nats-server with the account taking connections',
    () => connect({ servers: url, user: 'connectors', pass: 'account-test-pw', timeout: 1_000 }).catch(() => null),
    { timeoutMs: 20_000, everyMs: 100 },
  );
  names = makeNames(namespace);
});
afterAll(async () => {
  await nc?.close();
  server?.kill('SIGTERM');
  if (server && server.exitCode === null) await new Promise((r) => server.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
});

describe('the shipped NATS account', () => {
  it('lets the runtime do all it does inside its namespace', async () => {
    const jsm = await jetstreamManager(nc);
    await ensureIngestStream(jsm, names);
    const seal = createSeal([TEST_MASTER_KEY]);
    const delivered: IngestEvent[] = [];
    const blobs = { put: async () => 'unused', get: async () => null, delete: async () => undefined };
    const ingest = new NodeIngest({
      nc,
      js: jetstream(nc),
      jsm,
      names,
      blobs,
      deadLetters: { record: async () => undefined },
      deliver: async (events) => void delivered.push(...events),
      seal,
      log,
    });
    const host = new ShardHost({
      nc,
      names,
      log,
      dispatch: async (req) => ({ echoed: req.msg.type }),
      ingest,
      passivate: async () => undefined,
      seal,
      replay: replayGuard(await openReplayBuckets((name, o) => openKv(nc, name, o), names), { log }),
    });
    const shards = new ShardManager({
      nc,
      names,
      nodeId: 'acct-node',
      shards: 2,
      leaseTtlMs: 3_000,
      log,
      listener: host,
    });
    await shards.start();
    try {
      for (const bucket of [names.cursorBucket, names.dedupBucket]) {
        const kv = await openKv(nc, bucket, bucket === names.dedupBucket ? { ttlMs: 60_000 } : {});
        await kv.put('probe', 'v');
        expect((await kv.get('probe'))?.string()).toBe('v');
      }
      await until('both shards leased', () => shards.owned().length === 2, { timeoutMs: 20_000, everyMs: 100 });
      const router = new Router({ nc, names, shards: 2, log, seal });
      expect(await router.ask({ kind: 'install', id: ['i-1'] }, { type: 'health' }, { timeoutMs: 10_000 })).toEqual({
        echoed: 'health',
      });
      const publisher = new IngestPublisher({
        js: jetstream(nc),
        names,
        shards: 2,
        blobs,
        maxPayload: nc.info!.max_payload,
        seal,
      });
      const ev: IngestEvent = {
        installId: '00000000-0000-4000-8000-000000000001',
        tenantId: '00000000-0000-4000-8000-000000000002',
        connectorId: 'chatapp',
        id: 'message:C1:1.0',
        kind: 'message',
        occurredAt: null,
        payload: {},
      };
      await publisher.publish(ev);
      await until('the event delivered', () => delivered.length > 0, { timeoutMs: 20_000, everyMs: 100 });
      expect(delivered[0]!.id).toBe(ev.id);
      // Each shard's reader of max-deliveries advisories pulls from its stream (max-deliveries.ts).
      for (const shard of [0, 1]) {
        await until(
          `shard ${shard}'s advisories pulled`,
          async () =>
            (await jsm.consumers.info(names.ingestMaxedStream, names.ingestMaxedConsumer(shard))).num_waiting > 0,
          { timeoutMs: 20_000, everyMs: 100 },
        );
      }
      nc.publish(names.graphChanged(ev.tenantId), '{}');
      await nc.flush();
    } finally {
      await shards.stop();
    }
  });

  it('refuses subjects and streams outside the namespace', async () => {
    const other = await connect({ servers: url, user: 'connectors', pass: 'account-test-pw' });
    const errors: string[] = [];
    (async () => {
      for await (const s of other.status()) if (s.type === 'error') errors.push(String(s.error));
    })().catch(() => undefined);
    other.publish('othernamespace.ingest.0.chatapp.x', 'forged');
    await other.flush();
    const jsm = await jetstreamManager(other);
    await expect(jsm.streams.add({ name: 'OTHER_INGEST', subjects: ['othernamespace.>'] })).rejects.toThrow();
    await other.close();
    expect(errors.join(' ')).toMatch(/Permissions Violation/i);
  });
});
