/**
 * `connectors dev` behaves like a server (issue 34): SIGTERM or SIGINT to `npx` (which passes
 * it to its `sh -c` only) stops the node and its Postgres and nats-server; a node killed outright takes
 * them with it; a second `dev` on the same directory refuses in one line and deletes nothing;
 * the ready file gives what `tenants create` and `api-keys create` need, and nothing more.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isAlive } from '../../src/dev/is-alive.js';
import { exited, runCli, startCli } from '../support/cli.js';
import { until } from '../support/until.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'connectors-devsrv-'));
const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every process below `pid` (children, grandchildren, …), from one `ps` listing. */
function descendants(pid: number): Array<{ pid: number; args: string }> {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }));
  const found: Array<{ pid: number; args: string }> = [];
  const walk = (p: number) => {
    for (const r of rows.filter((x) => x.ppid === p)) {
      found.push({ pid: r.pid, args: r.args });
      walk(r.pid);
    }
  };
  walk(pid);
  return found;
}

/** The embedded Postgres' postmaster and the nats-server among them. */
function servers(tree: Array<{ args: string }>): string[] {
  return tree.map((p) => p.args).filter((a) => /^\S*\/postgres -D /.test(a) || /^\S*nats-server -a /.test(a));
}

function snapshot(d: string): string[] {
  return readdirSync(d, { recursive: true, encoding: 'utf8' })
    .filter((f) => !f.startsWith('pg/') && !f.startsWith('nats/'))
    .sort();
}

async function readyFile(path: string, child: ChildProcess, stderr: () => string): Promise<Record<string, any>> {
  await until(
    'the ready file',
    () => {
      if (child.exitCode !== null) throw new Error(`dev exited ${child.exitCode}: ${stderr().slice(-2000)}`);
      return existsSync(path);
    },
    { timeoutMs: 150_000, everyMs: 200 },
  );
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, any>;
}

/** `npx connectors dev --ready-file <ready>` from the repository, as a user runs it; resolves once ready. */
async function npxDev(ready: string): Promise<{ npx: ChildProcess; line: Record<string, any>; stdout: () => string }> {
  const npx = spawn('npx', ['--no', 'connectors', 'dev', '--ready-file', ready], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SERVICE_DEV_DIR: dir, PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(npx);
  let stderr = '';
  let stdout = '';
  npx.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  npx.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const line = await readyFile(ready, npx, () => stderr);
  return { npx, line, stdout: () => stdout };
}

/** Every process of `tree` gone (each pid checked, not just the one signalled). */
function allGone(tree: Array<{ pid: number }>, timeoutMs: number): Promise<boolean> {
  return until('every process dev started to exit', () => tree.every((p) => !isAlive(p.pid)), {
    timeoutMs,
    everyMs: 100,
  });
}

describe('connectors dev as a server', () => {
  it('SIGTERM to npx stops everything; a second dev refuses; the ready file drives the CLI', async () => {
    const ready = join(dir, 'ready.json');
    const { npx, line, stdout } = await npxDev(ready);

    // The file is the ready line (§9.1 fields and more), complete when it appears.
    await until('the ready line', () => stdout().includes('\n'));
    expect(JSON.parse(stdout().split('\n')[0]!)).toEqual(line);
    expect(Object.keys(line.env).sort()).toEqual([
      'DATABASE_URL',
      'NATS_URL',
      'SERVICE_MASTER_KEY',
      'SERVICE_NAMESPACE',
    ]);

    // Exactly what the file gives runs the operator commands against the dev database.
    const tenant = await runCli(['tenants', 'create', '--name', 'From the ready file'], line.env);
    expect(tenant.code, tenant.stderr).toBe(0);
    const created = JSON.parse(tenant.stdout) as { tenant_id: string; api_key: string };
    const key = await runCli(['api-keys', 'create', '--tenant', line.tenant_id], line.env);
    expect(key.code, key.stderr).toBe(0);
    for (const apiKey of [created.api_key, (JSON.parse(key.stdout) as { api_key: string }).api_key]) {
      const res = await fetch(`${line.url}/api/v1/connectors/installs`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect(res.status).toBe(200);
    }

    // A second dev on the same directory: one line, non-zero, nothing touched.
    const before = snapshot(dir);
    const second = await runCli(['dev'], { SERVICE_DEV_DIR: dir, PORT: '0' }, 20_000);
    expect(second.code).not.toBe(0);
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stderr).toMatch(/another `connectors dev` \(pid \d+\) is running on/);
    expect(snapshot(dir)).toEqual(before);
    expect((await fetch(`${line.url}/readyz`)).status).toBe(200);

    const tree = descendants(npx.pid!);
    expect(servers(tree)).toHaveLength(2);
    npx.kill('SIGTERM');
    await allGone(tree, 40_000);
    expect(existsSync(ready)).toBe(false);
    expect(existsSync(join(dir, 'dev.lock'))).toBe(false);
  }, 240_000);

  it('SIGINT to npx (held by its sh -c until the child exits) stops everything too', async () => {
    const ready = join(dir, 'ready-int.json');
    const { npx } = await npxDev(ready);
    const tree = descendants(npx.pid!);
    expect(servers(tree)).toHaveLength(2);
    npx.kill('SIGINT');
    await allGone(tree, 40_000);
    await until('npx to exit', () => npx.exitCode !== null || npx.signalCode !== null, { timeoutMs: 10_000 });
    expect(existsSync(ready)).toBe(false);
  }, 240_000);

  it('a dev killed outright takes its Postgres and nats-server with it; the next start takes over', async () => {
    const env = { SERVICE_DEV_DIR: dir, PORT: '0' };
    const { child, first } = await startCli(['dev'], env, 150_000);
    started.push(child);
    const tree = descendants(child.pid!);
    expect(servers(tree)).toHaveLength(2);
    child.kill('SIGKILL');
    await allGone(tree, 20_000);
    // Its lock names a dead process: the next start takes it over and finds the same tenant.
    const again = await startCli(['dev'], env, 150_000);
    started.push(again.child);
    expect(again.first.tenant_id).toBe(first.tenant_id);
    again.child.kill('SIGTERM');
    expect(await exited(again.child, 60_000)).toBe(0);
  }, 360_000);
});
