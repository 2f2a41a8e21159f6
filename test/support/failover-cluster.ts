/**
 * Real `connectors serve` processes for the failover test (three nodes; one
 * is killed with SIGKILL and another restarted). Each node is `node bin/connectors.js
 * serve` with its own NODE_ID and PORT against the run's Postgres and a shared namespace.
 *
 * Children are killed with SIGKILL when this process exits for any reason, so a crashed or
 * timed-out test never leaves nodes holding leases on the shared NATS server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { BIN } from './cli.js';
import { until } from './until.js';
import { freePort } from '../../src/dev/free-port.js';

export interface ServeProcess {
  readonly nodeId: string;
  readonly port: number;
  readonly url: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last lines the node logged (stdout and stderr), for a failure report. */
  logTail(lines?: number): string;
  /** True once this very process logged "node ready" on its own port. */
  readyLogged(): boolean;
}

const LOG_LINES_KEPT = 400;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
}

export function assertBuilt(): void {
  if (!existsSync(fileURLToPath(new URL('../../dist/cli.js', import.meta.url)))) {
    throw new Error('dist/cli.js is missing: run `npm run build` first (npm test does it)');
  }
}

/** Start one node; `env` is the whole environment besides PATH/HOME (nothing leaks in). */
export function startServe(nodeId: string, port: number, env: Record<string, string>): ServeProcess {
  installExitHook();
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...env,
      // waitReady needs the node's own "node ready" line (info), whatever level the test chose.
      LOG_LEVEL: ['debug', 'trace'].includes(env.LOG_LEVEL ?? '') ? env.LOG_LEVEL! : 'info',
      NODE_ID: nodeId,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const lines: string[] = [];
  // FO_LOG_DIR=<dir> keeps every node's whole log, for digging into a failure.
  const file = process.env.FO_LOG_DIR
    ? createWriteStream(join(process.env.FO_LOG_DIR, `${nodeId}-${child.pid}.log`))
    : null;
  let readyLogged = false;
  const ownUrl = `"url":"http://127.0.0.1:${port}"`;
  const keep = (chunk: Buffer) => {
    file?.write(chunk);
    for (const l of chunk.toString().split('\n')) {
      if (!l.trim()) continue;
      lines.push(l);
      if (l.includes('"msg":"node ready"') && l.includes(ownUrl)) readyLogged = true;
    }
    if (lines.length > LOG_LINES_KEPT) lines.splice(0, lines.length - LOG_LINES_KEPT);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  return {
    nodeId,
    port,
    url: `http://127.0.0.1:${port}`,
    child,
    exited,
    logTail: (n = 60) => lines.slice(-n).join('\n'),
    readyLogged: () => readyLogged,
  };
}

/**
 * Poll GET /readyz until 200 and until the node itself logged "node ready" on its port:
 * another test's process may have taken the port between `freePort()` and this node's
 * bind, and its /readyz would answer for it. Throws with the node's log when it exits or
 * times out.
 */
export async function waitReady(p: ServeProcess, timeoutMs: number): Promise<void> {
  let exited = false;
  void p.exited.then(() => (exited = true));
  await until(
    `${p.nodeId} ready`,
    async () => {
      if (exited) throw new Error(`${p.nodeId} exited while starting:\n${p.logTail()}`);
      return (
        p.readyLogged() &&
        (await fetch(`${p.url}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
          (r) => r.status === 200,
          () => false,
        ))
      );
    },
    { timeoutMs, everyMs: 50, explain: () => p.logTail() },
  );
}

/**
 * Starts a node and waits until it is ready; when its port was taken in the meantime
 * (EADDRINUSE), starts it again on another free port, a few times at most.
 */
export async function startServeReady(
  nodeId: string,
  env: Record<string, string>,
  timeoutMs: number,
  port?: number,
): Promise<ServeProcess> {
  for (let attempt = 1; ; attempt++) {
    const p = startServe(nodeId, attempt === 1 && port !== undefined ? port : await freePort(), env);
    try {
      await waitReady(p, timeoutMs);
      return p;
    } catch (err) {
      const taken = p.logTail(LOG_LINES_KEPT).includes('EADDRINUSE');
      if (!taken || attempt >= 3) throw err;
    }
  }
}

/** SIGKILL: no drain, no lease release; the kernel closes its sockets. */
export async function kill9(p: ServeProcess): Promise<void> {
  p.child.kill('SIGKILL');
  await p.exited;
}

/**
 * SIGTERM and wait for a clean exit (the node drains and releases its leases). Returns how
 * long the graceful stop took; falls back to SIGKILL (and says so) past `timeoutMs`.
 */
export async function terminate(
  p: ServeProcess,
  timeoutMs: number,
): Promise<{ ms: number; code: number | null; forced: boolean }> {
  const t0 = performance.now();
  p.child.kill('SIGTERM');
  const done = await Promise.race([p.exited.then((e) => e), sleep(timeoutMs).then(() => null)]);
  if (done === null) {
    p.child.kill('SIGKILL');
    await p.exited;
    return { ms: performance.now() - t0, code: null, forced: true };
  }
  return { ms: performance.now() - t0, code: done.code, forced: false };
}

/** Kill every node still running (afterAll, also after a failure). */
export async function killAll(): Promise<void> {
  const waits: Array<Promise<unknown>> = [];
  for (const c of live) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    waits.push(new Promise((r) => c.once('exit', r)));
    c.kill('SIGKILL');
  }
  await Promise.all(waits);
}
