/**
 * Integration: NATS for production (INTERFACE §9.2). A node authenticates to a private
 * nats-server (spare port, own store dir) by token, by user and password, and over TLS
 * with a client certificate, and is refused with an error naming the settings otherwise (an
 * operator command's one-shot connection too);
 * streams and buckets carry the configured replicas and descriptions (an existing stream
 * is brought to them, a server that cannot hold them stops the start saying how); a full
 * ingest stream refuses new events without discarding a stored one.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { ensureIngestStream } from '../../src/ingest/stream.js';
import { IngestPublisher } from '../../src/ingest/publish.js';
import { names as makeNames } from '../../src/runtime/names.js';
import { connectNatsOnce } from '../../src/runtime/nats-connect.js';
import { cleanNamespace, startTestNode, type TestNode } from '../support/node.js';
import { freshNamespace, testNatsUrl } from '../support/env.js';
import { makeTestCerts } from '../support/tls-certs.js';
import { startNatsChild, type NatsChild } from '../support/nats-restart-server.js';

const children: NatsChild[] = [];
const nodes: TestNode[] = [];
afterAll(async () => {
  for (const n of nodes) await n.stop().catch(() => undefined);
  for (const c of children) await c.dispose();
});

async function child(config: string): Promise<NatsChild> {
  const c = await startNatsChild({ config });
  children.push(c);
  return c;
}

/** The node starts and owns its shards on that server. */
async function startsOn(env: Record<string, string>): Promise<void> {
  const node = await startTestNode(env);
  nodes.push(node);
  const ready = await fetch(`${node.url}/readyz`);
  expect(ready.status).toBe(200);
  await node.node.stop();
}

describe('NATS authentication', () => {
  it('token: connects with NATS_TOKEN, refused without it (the token never in the error)', async () => {
    const token = `tok-${randomBytes(12).toString('hex')}`;
    const c = await child(`authorization { token: "${token}" }\n`);
    await startsOn({ NATS_URL: c.url, NATS_TOKEN: token });
    const refused = await startTestNode({ NATS_URL: c.url, NATS_TOKEN: 'wrong-token' }).then(
      () => null,
      (err: Error) => err,
    );
    expect(refused?.message).toMatch(/authorization refused: check NATS_CREDS, NATS_TOKEN or NATS_USER\/NATS_PASSWORD/);
    expect(refused?.message).not.toContain('wrong-token');
    // An operator command's one-shot connection: the same settings, the same refusal.
    const none = { credsFile: null, user: null, password: null, tlsCaFile: null, tlsCertFile: null, tlsKeyFile: null };
    const auth = (t: string) => ({ ...none, token: t });
    const once = await connectNatsOnce([c.url], auth(token), 'test-cli');
    await once.close();
    const cliRefused = await connectNatsOnce([c.url], auth('wrong-token'), 'test-cli').then(
      () => null,
      (err: Error) => err,
    );
    expect(cliRefused?.message).toMatch(/^cannot connect to NATS at nats:\/\/[^ ]+: authorization refused/);
    expect(cliRefused?.message).not.toContain('wrong-token');
  });

  it('user and password: connects with NATS_USER/NATS_PASSWORD; a user:pass in the URL is not used', async () => {
    const password = randomBytes(12).toString('hex');
    const c = await child(`authorization { users: [ { user: "svc", password: "${password}" } ] }\n`);
    await startsOn({ NATS_URL: c.url, NATS_USER: 'svc', NATS_PASSWORD: password });
    const inUrl = c.url.replace('nats://', `nats://svc:${password}@`);
    const refused = await startTestNode({ NATS_URL: inUrl }).then(
      () => null,
      (err: Error) => err,
    );
    expect(refused?.message).toMatch(/cannot connect to NATS/);
    expect(refused?.message).not.toContain(password);
  });

  it('TLS: verifies the server with NATS_TLS_CA and presents NATS_TLS_CERT/NATS_TLS_KEY', async () => {
    const certs = makeTestCerts();
    try {
      const c = await child(
        `tls { cert_file: "${certs.serverCert}", key_file: "${certs.serverKey}", ca_file: ` +
          `"${certs.ca}", verify: true }\n`,
      );
      await startsOn({
        NATS_URL: c.url,
        NATS_TLS_CA: certs.ca,
        NATS_TLS_CERT: certs.clientCert,
        NATS_TLS_KEY: certs.clientKey,
      });
      // The server demands a client certificate (verify: true), so starting proves it was presented.
      const missing = await startTestNode({ NATS_URL: c.url, NATS_TLS_CA: `${certs.dir}/absent.pem` }).then(
        () => null,
        (err: Error) => err,
      );
      expect(missing?.message).toMatch(/NATS_TLS_CA: cannot read/);
    } finally {
      rmSync(certs.dir, { recursive: true, force: true });
    }
  });
});

describe('replicas, descriptions, limits', () => {
  it('a single server refuses 3 replicas with an error saying what to set', async () => {
    const err = await startTestNode({ SERVICE_NATS_REPLICAS: '3' }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/SERVICE_NATS_REPLICAS must not exceed the JetStream servers/);
    expect(err?.message).toMatch(/set it to 1 for a single server/);
  });

  it('every stream, consumer and bucket has a description; an existing stream is updated to the settings', async () => {
    const ns = freshNamespace('desc');
    const nc = await connect({ servers: testNatsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      const n = makeNames(ns);
      await ensureIngestStream(jsm, n, { maxBytes: 8 * 1024 * 1024 });
      const node = await startTestNode({ SERVICE_NAMESPACE: ns, SERVICE_INGEST_MAX_BYTES: String(4 * 1024 * 1024) });
      nodes.push(node);
      const ingest = (await jsm.streams.info(n.ingestStream)).config;
      expect(ingest).toMatchObject({ max_bytes: 4 * 1024 * 1024, discard: 'new', num_replicas: 1 });
      const streams = [];
      for await (const s of jsm.streams.list()) if (s.config.name.includes(ns)) streams.push(s.config);
      expect(streams.length).toBeGreaterThanOrEqual(6); // ingest + meta, leases, nodes, cursors, dedup
      for (const s of streams) expect(s.description, s.name).toMatch(new RegExp(`^connector-service ${ns}: .+`));
      const consumer = (await jsm.consumers.info(n.ingestStream, n.ingestConsumer(0))).config;
      expect(consumer.description).toBe(`connector-service ${ns}: durable consumer of one shard`);
    } finally {
      await nc.close();
    }
  });

  it('a full ingest stream refuses the publish (503 unavailable) and keeps every stored event', async () => {
    const ns = freshNamespace('full');
    const nc = await connect({ servers: testNatsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      const n = makeNames(ns);
      await ensureIngestStream(jsm, n, { maxBytes: 1024 * 1024 });
      const publisher = new IngestPublisher({
        js: jetstream(nc),
        names: n,
        shards: 4,
        blobs: { put: async () => 'x', get: async () => null, delete: async () => undefined },
        maxPayload: 1024 * 1024,
      });
      const text = 'x'.repeat(64 * 1024);
      const acked: number[] = [];
      let refused: unknown = null;
      for (let i = 0; i < 40 && refused === null; i++) {
        const ev = { installId: randomUUID(), tenantId: randomUUID(), connectorId: 'codehost' };
        await publisher.publish({ ...ev, id: `e${i}`, kind: 'push', occurredAt: null, payload: { text } }).then(
          (r) => acked.push(r.seq),
          (err: unknown) => (refused = err),
        );
      }
      expect(refused).toBeInstanceOf(AppError);
      expect((refused as AppError).code).toBe('unavailable');
      const state = (await jsm.streams.info(n.ingestStream)).state;
      expect(state.first_seq).toBe(1); // discard-new: nothing stored was dropped to make room
      expect(state.messages).toBe(acked.length);
    } finally {
      await nc.close();
      await cleanNamespace(ns);
    }
  });
});
