/**
 * The processes under test: `node bin/connectors.js serve` nodes (built first: `npm run
 * bench` builds) and the baseline server. Each runs in its own OS process like in
 * production; peak RSS is the kernel's high-water mark (`VmHWM` in /proc/<pid>/status).
 * Children are SIGKILLed if the bench process exits for any reason.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/dev/free-port.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = `${ROOT}bin/connectors.js`;

export interface Child {
  name: string;
  url: string;
  proc: ChildProcess;
  logTail(): string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function launch(name: string, args: string[], env: Record<string, string>, port: number): Child {
  const proc = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  const lines: string[] = [];
  // BENCH_LOG_DIR: every line of every process also goes to <dir>/<name>.log (appended across restarts).
  const file = process.env.BENCH_LOG_DIR
    ? createWriteStream(`${process.env.BENCH_LOG_DIR}/${name}.log`, { flags: 'a' })
    : null;
  const keep = (b: Buffer) => {
    file?.write(b);
    for (const l of b.toString().split('\n')) if (l.trim()) lines.push(l);
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return { name, url: `http://127.0.0.1:${port}`, proc, logTail: () => lines.slice(-40).join('\n') };
}

/**
 * `roles` as `connectors serve --roles` takes them (INTERFACE §1); default both.
 * `nodeFlags` go to node itself (e.g. `--cpu-prof --cpu-prof-dir=…`).
 */
export async function startNode(
  nodeId: string,
  env: Record<string, string>,
  roles = 'edge,actors',
  nodeFlags: string[] = [],
): Promise<Child> {
  if (!existsSync(`${ROOT}dist/cli.js`))
    throw new Error('dist/cli.js is missing: run `npm run build` (npm run bench does)');
  return launch(nodeId, [...nodeFlags, BIN, 'serve', '--roles', roles], { ...env, NODE_ID: nodeId }, await freePort());
}

export async function startBaseline(env: Record<string, string>, nodeFlags: string[] = []): Promise<Child> {
  return launch(
    'baseline',
    [...nodeFlags, '--import', 'tsx', 'bench/ingest/baseline-server.ts'],
    env,
    await freePort(),
  );
}

/** Until GET `path` answers 200 (readiness, or the metrics of a node). */
export async function waitFor(
  c: Child,
  path: string,
  timeoutMs: number,
  ok: (body: string) => boolean = () => true,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (c.proc.exitCode !== null) throw new Error(`${c.name} exited:\n${c.logTail()}`);
    const body = await fetch(`${c.url}${path}`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => (r.status === 200 ? r.text() : null),
      () => null,
    );
    if (body !== null && ok(body)) return;
    await sleep(100);
  }
  throw new Error(`${c.name}: GET ${path} not ready within ${timeoutMs} ms:\n${c.logTail()}`);
}

/** The node's `connector_service_shards_owned` gauge, or null when unreadable. */
export async function shardsOwned(c: Child): Promise<number | null> {
  const text = await fetch(`${c.url}/metrics`, { signal: AbortSignal.timeout(1_000) }).then(
    (r) => r.text(),
    () => '',
  );
  const m = /^connector_service_shards_owned ([0-9.]+)$/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** Peak resident set size of the process so far, in MiB. */
export async function peakRssMiB(c: Child): Promise<number> {
  const status = await readFile(`/proc/${c.proc.pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

/**
 * CPU time (user + system, all threads) the process has used so far, in ms: on a shared
 * 2-vCPU machine, CPU per accepted request is steadier than requests per second.
 */
export async function cpuMs(c: Child): Promise<number> {
  const stat = await readFile(`/proc/${c.proc.pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start at field 3, `state`.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15)
  return (ticks * 1000) / CLOCK_TICKS_PER_S;
}
/** USER_HZ: 100 on Linux on every architecture we run on (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_S = 100;

/** SIGTERM (graceful), SIGKILL after `timeoutMs`. */
export async function stop(c: Child, timeoutMs = 20_000): Promise<void> {
  if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  const exited = new Promise((r) => c.proc.once('exit', r));
  c.proc.kill('SIGTERM');
  if ((await Promise.race([exited.then(() => true), sleep(timeoutMs).then(() => false)])) === false) {
    c.proc.kill('SIGKILL');
    await exited;
  }
}
