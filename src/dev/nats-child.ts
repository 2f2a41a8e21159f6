/**
 * A nats-server child with JetStream for `connectors dev` (INTERFACE §1), its store kept
 * under `storeDir` so streams and KV survive restarts. Development only: production runs
 * NATS from its own Helm chart (deploy/README.md).
 *
 * The server must not outlive us, however we die. A 'process.on("exit")' hook misses
 * SIGKILL and unhandled signals, so the server runs under a tiny `sh` watchdog that holds
 * the read end of a pipe whose write end only we hold: when we exit by any means the kernel
 * closes it, the watchdog reads EOF and terminates the server. The watchdog leads its own
 * process group, so a terminal's Ctrl-C reaches us (and our orderly stop) rather than
 * killing the server under a node that is still draining.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { delimiter, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import { againIfPortTaken, freePort } from './free-port.js';
import { isAlive } from './is-alive.js';

export interface NatsChildOptions {
  storeDir: string;
  /** Client port on 127.0.0.1; a free one is picked when absent. */
  port?: number;
  log: Logger;
  /** How long to wait for the server to accept clients with JetStream ready. */
  readyTimeoutMs?: number;
}

export interface NatsChild {
  /** `nats://127.0.0.1:<port>` */
  url: string;
  /** The nats-server process id (not the watchdog's). */
  pid: number;
  stop(): Promise<void>;
}

class NatsServerNotFound extends Error {
  constructor() {
    super(
      'nats-server not found in /usr/sbin or PATH: install it (Debian/Ubuntu: apt-get install ' +
        'nats-server; elsewhere: https://docs.nats.io/running-a-nats-service/introduction/installation)',
    );
    this.name = 'NatsServerNotFound';
  }
}

const HOST = '127.0.0.1';
const STOP_GRACE_MS = 10_000;

// The watchdog: a reader waits for EOF on our pipe (we stopped it, or died by any means)
// and then terminates the server; the shell itself waits for the server, so it also exits
// when the server does (e.g. its port was taken), and takes the reader with it. Background
// jobs of a non-interactive sh get /dev/null as stdin, hence the pipe passed on fd 3.
const WATCHDOG = `exec 3<&0
"$@" 3<&- &
child=$!
echo "nats-server-pid $child"
( while read -r _; do :; done; kill -TERM "$child" 2>/dev/null ) <&3 &
reader=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
kill "$reader" 2>/dev/null`;

function findNatsServer(env: NodeJS.ProcessEnv = process.env): string | null {
  const dirs = ['/usr/sbin', ...(env.PATH ?? '').split(delimiter).filter(Boolean)];
  for (const dir of dirs) {
    const candidate = join(dir, 'nats-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; try the next directory
    }
  }
  return null;
}

export async function startNatsChild(opts: NatsChildOptions): Promise<NatsChild> {
  const bin = findNatsServer();
  if (bin === null) throw new NatsServerNotFound();
  const storeDir = resolve(opts.storeDir);
  await mkdir(storeDir, { recursive: true });
  if (opts.port !== undefined) return startOn(bin, storeDir, opts.port, opts);
  return againIfPortTaken(async () => startOn(bin, storeDir, await freePort(HOST), opts));
}

async function startOn(bin: string, storeDir: string, port: number, opts: NatsChildOptions): Promise<NatsChild> {
  const log = opts.log.child({ component: 'nats-server' });
  // A unique name tells our server from another one that holds the port first (then ours
  // fails to bind and exits, which the wait below reports).
  const serverName = `connectors-dev-${process.pid}-${randomBytes(4).toString('hex')}`;
  const args = ['-a', HOST, '-p', String(port), '-n', serverName, '-js', '-sd', storeDir];

  const watchdog = spawn('/bin/sh', ['-c', WATCHDOG, 'nats-watchdog', bin, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const recent: string[] = [];
  let serverPid: number | null = null;
  const pidKnown = new Promise<number>((res) => {
    createInterface({ input: watchdog.stdout! }).on('line', (line) => {
      const m = /^nats-server-pid (\d+)$/.exec(line);
      if (m && serverPid === null) {
        serverPid = Number(m[1]);
        res(serverPid);
      } else {
        log.debug({ nats: line });
      }
    });
  });
  const stderrEnded = new Promise((r) => watchdog.stderr!.once('end', r));
  createInterface({ input: watchdog.stderr! }).on('line', (line) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
    log.debug({ nats: line });
  });
  // A write to the pipe after the watchdog died must not crash us.
  watchdog.stdin!.on('error', () => undefined);
  const exited = new Promise<void>((res) => {
    watchdog.once('exit', () => res());
    // A failed spawn emits 'error' and may never emit 'exit'.
    watchdog.once('error', (err) => {
      recent.push(err.message);
      res();
    });
  });
  let alive = true;
  void exited.then(() => (alive = false));

  let stopping: Promise<void> | null = null;
  const stop = () => (stopping ??= stopChild(watchdog, exited, () => serverPid));

  const url = `nats://${HOST}:${port}`;
  try {
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 15_000);
    const early = exited.then(async (): Promise<never> => {
      // Its last lines may still be on their way: wait (briefly) for its stderr to end.
      await Promise.race([stderrEnded, new Promise((r) => setTimeout(r, 500))]);
      // Its fatal line says why (e.g. the port is taken); otherwise its last words.
      const why = recent.filter((l) => /\[(FTL|ERR)\]/.test(l)).at(-1) ?? recent.at(-1) ?? 'no output';
      throw new Error(`nats-server exited before it was ready on ${HOST}:${port}: ${why}`);
    });
    // Only the race below reports it; once the server is up, its later exit is stop()'s.
    early.catch(() => undefined);
    await Promise.race([early, pidKnown.then(() => waitReady(url, port, serverName, deadline, () => alive))]);
  } catch (err) {
    await stop();
    throw err;
  }
  log.info({ port, storeDir }, 'nats-server ready');
  return { url, pid: serverPid!, stop };
}

async function stopChild(watchdog: ChildProcess, exited: Promise<void>, serverPid: () => number | null): Promise<void> {
  if (watchdog.exitCode === null && watchdog.signalCode === null) watchdog.stdin!.end();
  const timedOut = await Promise.race([
    exited.then(() => false),
    sleep(STOP_GRACE_MS, { unref: true }).then(() => true),
  ]);
  if (timedOut && watchdog.pid !== undefined) {
    // The watchdog leads the group; the group holds the server too.
    try {
      process.kill(-watchdog.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await exited;
  }
  // The watchdog waits for the server, but a SIGKILLed watchdog does not: make sure.
  const pid = serverPid();
  if (pid !== null) await waitGone(pid, STOP_GRACE_MS);
}

/** TCP accept first (cheap), then a real client whose JetStream answers. */
async function waitReady(
  url: string,
  port: number,
  serverName: string,
  deadline: number,
  alive: () => boolean,
): Promise<void> {
  let lastError: unknown = null;
  while (Date.now() < deadline && alive()) {
    if (await tcpOpen(HOST, port)) {
      try {
        const nc = await connect({ servers: url, reconnect: false, timeout: 2_000 });
        try {
          if (nc.info?.server_name !== serverName)
            throw new Error(`another server (${nc.info?.server_name}) answers on port ${port}`);
          const jsm = await jetstreamManager(nc);
          await jsm.getAccountInfo();
          return;
        } finally {
          await nc.close();
        }
      } catch (err) {
        lastError = err;
      }
    }
    await sleep(100);
  }
  const why = lastError instanceof Error ? `: ${lastError.message}` : '';
  throw new Error(`nats-server on ${url} did not become ready with JetStream${why}`, { cause: lastError });
}

function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((res) => {
    const socket = tcpConnect({ host, port });
    socket.setTimeout(1_000);
    const done = (ok: boolean) => {
      socket.destroy();
      res(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

async function waitGone(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        return;
      }
    }
    if (Date.now() >= deadline + timeoutMs) throw new Error(`nats-server (pid ${pid}) survived SIGKILL`);
    await sleep(50);
  }
}

/** `unref` for a timer that only bounds a wait, so it never holds the process open. */
function sleep(ms: number, opts: { unref?: boolean } = {}): Promise<void> {
  return new Promise((res) => {
    const timer = setTimeout(res, ms);
    if (opts.unref) timer.unref();
  });
}
