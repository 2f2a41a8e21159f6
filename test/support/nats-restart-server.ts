/**
 * A private nats-server child for tests that kill the server: its own spare port and store
 * dir, so the machine's shared server at 4222 is never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { againIfPortTaken, freePort } from '../../src/dev/free-port.js';

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

export interface NatsChild {
  url: string;
  /** SIGKILL: no shutdown, no flush; what the store holds is what survives. */
  kill(): Promise<void>;
  /** Start again on the same port and store dir. */
  restart(): Promise<void>;
  /** Kill and remove the store dir. */
  dispose(): Promise<void>;
}

/** `config`: nats-server configuration text (authorization, tls...) added to the command line's settings. */
export async function startNatsChild(opts: { config?: string } = {}): Promise<NatsChild> {
  const storeDir = await mkdtemp(join(tmpdir(), 'nats-restart-'));
  const extra: string[] = [];
  if (opts.config !== undefined) {
    const file = join(storeDir, 'server.conf');
    await writeFile(file, opts.config);
    extra.push('-c', file);
  }
  const launch = (p: number, dir: string) => launchServer(p, dir, extra);
  const started = await againIfPortTaken(async () => {
    const port = await freePort();
    return { port, proc: await launch(port, storeDir) };
  });
  const port = started.port;
  let proc: ChildProcess | null = started.proc;
  const kill = async () => {
    const p = proc;
    proc = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    kill,
    async restart() {
      await kill();
      proc = await launch(port, storeDir);
    },
    async dispose() {
      await kill();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}

async function launchServer(port: number, storeDir: string, extra: string[]): Promise<ChildProcess> {
  // Flags after -c override the file's values (nats-server merges them over it).
  const args = [...extra, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(storeDir, 'js')];
  const p = spawn(NATS_SERVER, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server not ready in 10s:\n${log}`)), 10_000);
    p.stderr!.on('data', (b: Buffer) => {
      log += b.toString();
      if (log.includes('Server is ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    // 'close', not 'exit': its stderr is read to the end by then, so the error says why.
    p.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited (${code}):\n${log}`));
    });
  });
  // Keep draining its log so a full pipe never stalls the server.
  p.stderr!.resume();
  return p;
}
