/**
 * `connectors dead-letters list [--tenant T] [--install I]` and
 * `connectors dead-letters replay (--id ID | --install I | --all)` (INTERFACE §9.1).
 * `list` prints one JSON object per dead letter (none when there are none); `replay` puts
 * the selected events back on the durable ingest path and prints `{"replayed": N}`.
 */
import { parseArgs } from 'node:util';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { loadConfig } from '../config.js';
import { names as makeNames } from '../runtime/names.js';
import { natsAuthOptions, redactUrl } from '../runtime/nats.js';
import { createPool } from '../store/db.js';
import { listDeadLetters } from '../store/dead-letter-list.js';
import { migrate } from '../store/migrate.js';
import { replayDeadLetters } from '../wiring/replay-dead-letters.js';
import { UsageError } from './usage-error.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** INTERFACE §9.1: a command that cannot start gives up well within 15 s. */
const NATS_CONNECT_TIMEOUT_MS = 10_000;

export async function deadLettersCommand(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === 'list') return list(rest, env);
  if (sub === 'replay') return replay(rest, env);
  throw new UsageError(`unknown dead-letters command ${JSON.stringify(sub ?? '')}; expected: dead-letters list|replay`);
}

async function list(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const f = flags(args, { tenant: 'string', install: 'string' });
  const tenantId = uuidFlag(f, 'tenant');
  const installId = uuidFlag(f, 'install');
  const config = loadConfig(env, { requireDatabase: true });
  const pool = createPool(config.databaseUrl!);
  try {
    await migrate(pool);
    let cursor: string | null = null;
    do {
      const page = await listDeadLetters(pool, { tenantId, installId, limit: 500, cursor });
      for (const d of page.dead_letters) process.stdout.write(`${JSON.stringify(d)}\n`);
      cursor = page.next_cursor;
    } while (cursor !== null);
  } finally {
    await pool.end();
  }
}

async function replay(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const f = flags(args, { id: 'string', install: 'string', all: 'boolean' });
  const chosen = ['id', 'install', 'all'].filter((k) => f[k] !== undefined && f[k] !== false);
  if (chosen.length !== 1) throw new UsageError('replay takes exactly one of --id ID, --install I, --all');
  const id = f.id === undefined ? undefined : String(f.id);
  if (id !== undefined && !/^\d{1,18}$/.test(id)) throw new UsageError('--id must be a dead letter id (a number)');
  const installId = uuidFlag(f, 'install');

  const config = loadConfig(env, { requireDatabase: true });
  const pool = createPool(config.databaseUrl!);
  let nc;
  try {
    nc = await connect({
      servers: config.natsServers,
      name: 'connectors-dead-letters',
      timeout: NATS_CONNECT_TIMEOUT_MS,
      ...natsAuthOptions(config.nats),
    });
  } catch (err) {
    await pool.end();
    throw new Error(`cannot connect to NATS at ${config.natsServers.map(redactUrl).join(', ')}`, { cause: err });
  }
  try {
    await migrate(pool);
    const out = await replayDeadLetters(
      { db: pool, js: jetstream(nc), names: makeNames(config.namespace) },
      { id, installId },
    );
    if (out.skipped > 0) {
      process.stderr.write(`connectors: ${out.skipped} dead letter(s) of another SERVICE_NAMESPACE left alone\n`);
    }
    process.stdout.write(`${JSON.stringify({ replayed: out.replayed })}\n`);
  } finally {
    await nc.close();
    await pool.end();
  }
}

function flags(
  args: string[],
  spec: Record<string, 'string' | 'boolean'>,
): Record<string, string | boolean | undefined> {
  try {
    const options = Object.fromEntries(Object.entries(spec).map(([k, type]) => [k, { type }]));
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values as Record<
      string,
      string | boolean | undefined
    >;
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!);
  }
}

function uuidFlag(f: Record<string, string | boolean | undefined>, name: string): string | undefined {
  const v = f[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !UUID.test(v)) throw new UsageError(`--${name} must be an id (uuid)`);
  return v.toLowerCase();
}
