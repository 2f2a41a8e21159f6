import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { BIN, exited, runCli, startCli } from '../support/cli.js';
import { until } from '../support/until.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const dir = mkdtempSync(join(tmpdir(), 'connectors-dev-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Processes whose command line mentions the dev data dir (its Postgres and nats-server). */
function childrenOf(dataDir: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(dataDir) && !l.includes('ps -eo'));
}

async function readyz(url: string, timeoutMs: number): Promise<number> {
  let status = 0;
  return until(
    'dev answering /readyz with 200',
    async () => {
      status = await fetch(`${url}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      return status === 200 && status;
    },
    { timeoutMs, everyMs: 200, explain: () => `last /readyz status: ${status}` },
  );
}

describe('connectors dev', () => {
  it('runs everything with embedded defaults, answers /readyz, prints a working key, and stops cleanly', async () => {
    const env = { SERVICE_DEV_DIR: dir, PORT: '0', SERVICE_SHARDS: '4' };
    const { child, first, stderr, stdout } = await startCli(['dev'], { ...env, LOG_LEVEL: 'info' }, 120_000);
    // INTERFACE §9.1: one JSON ready line, exactly these fields.
    expect(first).toEqual({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      tenant_id: expect.stringMatching(UUID),
      api_key: expect.any(String),
      user_id: expect.stringMatching(UUID),
      database_url: expect.stringMatching(/^postgres:\/\/.+@127\.0\.0\.1:\d+\/connectors$/),
      nats_url: expect.stringMatching(/^nats:\/\/127\.0\.0\.1:\d+$/),
      // Beyond §9.1: the settings operator commands need against this dev (issue 34).
      env: {
        DATABASE_URL: first.database_url,
        NATS_URL: first.nats_url,
        SERVICE_NAMESPACE: 'svc',
        SERVICE_MASTER_KEY: expect.any(String),
      },
    });
    // The printed URLs work as printed: `users create` against database_url needs nothing else.
    const u = await runCli(['users', 'create', '--tenant', first.tenant_id as string, '--email', 'b@dev.test'], {
      DATABASE_URL: first.database_url as string,
    });
    expect(u.code, u.stderr).toBe(0);
    const nc = await connect({ servers: first.nats_url as string });
    await nc.close();
    const url = first.url as string;
    expect(await readyz(url, 30_000)).toBe(200);
    const res = await fetch(`${url}/api/v1/connectors/installs`, {
      headers: { authorization: `Bearer ${first.api_key as string}` },
    });
    expect(res.status).toBe(200);
    expect(childrenOf(dir).length).toBeGreaterThan(0);
    // Logs go to stderr: the ready line is stdout's only line, and the shards are one log line.
    expect(stdout().trim().split('\n')).toHaveLength(1);
    expect(
      stderr()
        .split('\n')
        .filter((l) => l.includes('"shards acquired"')),
    ).toHaveLength(1);
    expect(stderr()).not.toContain('"shard acquired"');

    child.kill('SIGTERM');
    expect(await exited(child, 60_000), stderr()).toBe(0);
    expect(childrenOf(dir)).toEqual([]);

    // A second start reuses the data and prints the same demo tenant.
    const again = await startCli(['dev'], env, 120_000);
    expect(again.first.tenant_id).toBe(first.tenant_id);
    expect(again.first.api_key).toBe(first.api_key);
    expect(again.first.user_id).toBe(first.user_id);
    again.child.kill('SIGTERM');
    expect(await exited(again.child, 60_000)).toBe(0);
    expect(childrenOf(dir)).toEqual([]);
  }, 240_000);

  it('a SIGTERM while it is still starting ends in the same clean stop', async () => {
    const env = { SERVICE_DEV_DIR: dir, PORT: '0', SERVICE_SHARDS: '4' };
    const child = spawn(process.execPath, [BIN, 'dev'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...env },
      stdio: 'ignore',
    });
    // Once its embedded Postgres is starting (a process on the data dir), it is mid-start.
    await until(
      'dev starting its embedded servers',
      () => {
        if (child.exitCode !== null)
          throw new Error(`dev exited (${child.exitCode}) before its embedded servers started`);
        return childrenOf(dir).length > 0;
      },
      { timeoutMs: 60_000 },
    );
    child.kill('SIGTERM');
    expect(await exited(child, 60_000)).toBe(0);
    expect(childrenOf(dir)).toEqual([]);
  }, 120_000);
});
