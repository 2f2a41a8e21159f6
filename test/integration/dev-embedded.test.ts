/**
 * `connectors dev` infrastructure against the real thing: the embedded Postgres binaries
 * (data persisted across restarts on one directory) and a nats-server child with JetStream
 * (gone after stop, and gone when its parent is killed outright, as the Postgres is).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { freePort } from '../../src/dev/free-port.js';
import { startNatsChild } from '../../src/dev/nats-child.js';
import { createLogger } from '../../src/log.js';
import { until } from '../support/until.js';

const log = createLogger({ level: 'silent', node: 'test' });
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'connectors-dev-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Runs `body` in a separate Node process with module `entry` as `m` and a silent `log`,
 * resolving with the first line it prints; the process then idles until killed.
 */
async function spawnTs(entry: string, body: string): Promise<{ child: ChildProcess; line: string }> {
  const code = `
    const m = await import(${JSON.stringify(resolve(entry))});
    const { createLogger } = await import(${JSON.stringify(resolve('src/log.ts'))});
    const log = createLogger({ level: 'silent', node: 'child' });
    ${body}
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', res);
    child.once('exit', (c) => rej(new Error(`child exited with ${c}`)));
  });
  return { child, line };
}

/** An embedded Postgres started by another process on `dataDir`; `line` is its URL. */
function postgresInChild(dataDir: string): Promise<{ child: ChildProcess; line: string }> {
  return spawnTs(
    'src/dev/embedded-postgres.ts',
    `const pg = await m.startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, log });
     process.stdout.write(pg.url + '\\n');`,
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('embedded Postgres', () => {
  it('initialises once, keeps data across restarts on the same directory, and stops', async () => {
    const dataDir = join(dir, 'pg');
    const first = await startEmbeddedPostgres({ dataDir, log });
    expect(new URL(first.url).pathname).toBe('/connectors');
    expect(await query(first.url, 'select 1 as one')).toEqual([{ one: 1 }]);
    await query(first.url, `create table kept (v text); insert into kept values ('still here')`);
    await first.stop();
    await expect(query(first.url, 'select 1')).rejects.toThrow();

    const port = await freePort();
    const second = await startEmbeddedPostgres({ dataDir, port, log });
    expect(new URL(second.url).port).toBe(String(port));
    try {
      expect(await query(second.url, 'select v from kept')).toEqual([{ v: 'still here' }]);
    } finally {
      await second.stop();
    }
    await expect(query(second.url, 'select 1')).rejects.toThrow();
  }, 120_000);

  it('a Postgres whose dev process was SIGKILLed exits by itself (its guard stops it)', async () => {
    const dataDir = join(dir, 'pg');
    const { child, line } = await postgresInChild(dataDir);
    expect(await query(line, 'select v from kept')).toEqual([{ v: 'still here' }]);
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    child.kill('SIGKILL');
    await until('the orphaned Postgres to stop', () => !isAlive(postmaster), { timeoutMs: 20_000 });
  }, 120_000);

  it('takes over a data directory whose server outlived its dev process and that guard', async () => {
    const dataDir = join(dir, 'pg');
    const { child, line } = await postgresInChild(dataDir);
    const orphanUrl = line;
    // A kill -9 of everything (the guard too) leaves the server running, holding the lock.
    const guards = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(child.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes('dev-orphan-guard'))
      .map((l) => Number(l.trim().split(/\s+/)[0]));
    expect(guards).toHaveLength(1);
    process.kill(guards[0]!, 'SIGKILL');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(await query(orphanUrl, 'select v from kept')).toEqual([{ v: 'still here' }]);

    const third = await startEmbeddedPostgres({ dataDir, log });
    try {
      expect(await query(third.url, 'select v from kept')).toEqual([{ v: 'still here' }]);
      await expect(query(orphanUrl, 'select 1')).rejects.toThrow();
    } finally {
      await third.stop();
    }
  }, 120_000);
});

describe('nats-server child', () => {
  it('serves publish/subscribe with JetStream, and is gone after stop', async () => {
    const nats = await startNatsChild({ storeDir: join(dir, 'nats'), log });
    try {
      const nc = await connect({ servers: nats.url });
      const sub = nc.subscribe('dev.test.hello', { max: 1 });
      nc.publish('dev.test.hello', 'hi');
      for await (const m of sub) expect(m.string()).toBe('hi');
      await nc.close();
    } finally {
      await nats.stop();
    }
    expect(isAlive(nats.pid)).toBe(false);
    await expect(connect({ servers: nats.url, reconnect: false, timeout: 1_000 })).rejects.toThrow();
  }, 60_000);

  it('reports a taken port in one line and leaves no process behind', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
    try {
      const started = startNatsChild({ storeDir: join(dir, 'nats-taken'), port, log });
      await expect(started).rejects.toThrow(/address already in use/);
      const message = await started.catch((err: Error) => err.message);
      expect(message).not.toContain('\n');
    } finally {
      holder.close();
    }
  }, 30_000);

  it('dies with its parent even when the parent is SIGKILLed', async () => {
    const { child, line } = await spawnTs(
      'src/dev/nats-child.ts',
      `const n = await m.startNatsChild({ storeDir: ${JSON.stringify(join(dir, 'nats-orphan'))}, log });
       process.stdout.write(n.pid + '\\n');`,
    );
    const pid = Number(line);
    expect(isAlive(pid)).toBe(true);
    child.kill('SIGKILL');
    await until('the embedded Postgres to exit', () => !isAlive(pid), { timeoutMs: 10_000 });
  }, 60_000);
});
