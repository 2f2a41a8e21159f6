/**
 * Integration, INTERFACE §9.1: a command that cannot start (port in use, Postgres or NATS
 * unreachable) exits non-zero within 15 s with one line on stderr, and leaves nothing
 * running: no half-started node that a first SIGTERM would not end, no child servers.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/free-port.js';
import { runCli } from '../support/cli.js';
import { cleanNamespace } from '../support/node.js';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';

let taken: Server;
let takenPort: number;
const dir = mkdtempSync(join(tmpdir(), 'connectors-startfail-'));

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => taken.close(r));
  // A start that failed late leaves the namespace's stream and buckets behind.
  for (const ns of namespaces) await cleanNamespace(ns);
  rmSync(dir, { recursive: true, force: true });
});

const namespaces: string[] = [];
const env = (extra: Record<string, string>) => ({
  DATABASE_URL: testDatabaseUrl(),
  NATS_URL: testNatsUrl(),
  SERVICE_NAMESPACE: namespaces[namespaces.push(freshNamespace('start')) - 1]!,
  SERVICE_MASTER_KEY: TEST_MASTER_KEY,
  SERVICE_SHARDS: '4',
  PORT: '0',
  ...extra,
});

const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

async function failsFast(args: string[], extra: Record<string, string>, mentions: RegExp, boundMs: number) {
  const started = Date.now();
  const r = await runCli(args, env(extra), 60_000);
  const ms = Date.now() - started;
  console.log(
    `figures: ${args[0]} with ${Object.keys(extra).join(',')} bad: exit ${r.code} after ${ms} ms: ${r.stderr.trim()}`,
  );
  expect(r.code).not.toBe(0);
  expect(r.code).not.toBeNull();
  expect(lines(r.stderr)).toHaveLength(1);
  expect(r.stderr).toMatch(mentions);
  expect(ms).toBeLessThan(boundMs);
}

describe('start-up failure', () => {
  it('serve with its port taken', async () => {
    await failsFast(['serve'], { PORT: String(takenPort) }, /EADDRINUSE|in use/, 15_000);
  }, 60_000);

  it('serve with NATS unreachable (a closed port)', async () => {
    await failsFast(['serve'], { NATS_URL: `nats://127.0.0.1:${await freePort()}` }, /NATS/, 15_000);
  }, 60_000);

  it('serve with NATS black-holed (a host that accepts and never speaks)', async () => {
    // `taken` accepts connections and never writes a byte: nats.js's own handshake wait is 20 s.
    await failsFast(['serve'], { NATS_URL: `nats://127.0.0.1:${takenPort}` }, /NATS/, 15_000);
  }, 60_000);

  it('serve with eight NATS servers listed, all black-holed', async () => {
    // 2 s of handshake each would be 16 s: the first connect as a whole is bounded too.
    const holes = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const s = createServer();
        await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
        return s;
      }),
    );
    try {
      const urls = holes.map((s) => `nats://127.0.0.1:${(s.address() as { port: number }).port}`);
      await failsFast(['serve'], { NATS_URL: urls.join(',') }, /NATS/, 15_000);
    } finally {
      for (const s of holes) s.close();
    }
  }, 60_000);

  it('serve with Postgres unreachable (a closed port)', async () => {
    await failsFast(
      ['serve'],
      { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/x` },
      /Postgres/,
      15_000,
    );
  }, 60_000);

  it('dev with its port taken stops its embedded Postgres and nats-server', async () => {
    // Cold start of the embedded Postgres (initdb) comes first, so no 15 s bound here.
    await failsFast(['dev'], { SERVICE_DEV_DIR: dir, PORT: String(takenPort) }, /EADDRINUSE|in use/, 120_000);
    const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
    expect(out.split('\n').filter((l) => l.includes(dir) && !l.includes('ps -eo'))).toEqual([]);
  }, 180_000);
});
