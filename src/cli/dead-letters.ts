/**
 * `connectors dead-letters list [--tenant T] [--install I]` and
 * `connectors dead-letters replay (--id ID | --install I | --all)` (INTERFACE §9.1).
 * `list` prints one JSON object per dead letter (none when there are none); `replay` puts
 * the selected events back on the durable ingest path and prints `{"replayed": N}`.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../config.js';
import { UsageError, UUID, type Command } from './command.js';

type Values = Record<string, string | boolean | undefined>;

/** Dead letters span tenants: the owner connection when configured, cross-tenant scope. */
async function operatorPool(config: Readonly<Config>): Promise<pg.Pool> {
  const { createPool } = await import('../store/db.js');
  return createPool(config.security.migrateDatabaseUrl ?? config.databaseUrl!);
}

export const deadLettersListCommand: Command = {
  name: 'dead-letters list',
  summary: 'list dead letters, one JSON object per line (none when there are none)',
  options: {
    tenant: { type: 'string', value: 'TENANT_ID', description: 'only this tenant (uuid)' },
    install: { type: 'string', value: 'INSTALL_ID', description: 'only this install (uuid)' },
  },
  run: (values, env) => list(values, env),
};

export const deadLettersReplayCommand: Command = {
  name: 'dead-letters replay',
  summary: 'put dead letters back on the durable ingest path (ingested once); prints {"replayed": N}',
  options: {
    id: { type: 'string', value: 'ID', description: 'one dead letter' },
    install: { type: 'string', value: 'INSTALL_ID', description: 'every dead letter of one install' },
    all: { type: 'boolean', description: 'every dead letter of this deployment' },
  },
  run: (values, env) => replay(values, env),
};

async function list(f: Values, env: NodeJS.ProcessEnv): Promise<void> {
  const tenantId = uuidFlag(f, 'tenant');
  const installId = uuidFlag(f, 'install');
  const [{ loadConfig }, { listDeadLetters }, { migrate }] = await Promise.all([
    import('../config.js'),
    import('../store/dead-letter-list.js'),
    import('../store/migrate.js'),
  ]);
  const config = loadConfig(env, { requireDatabase: true });
  const pool = await operatorPool(config);
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

async function replay(f: Values, env: NodeJS.ProcessEnv): Promise<void> {
  const chosen = ['id', 'install', 'all'].filter((k) => f[k] !== undefined && f[k] !== false);
  if (chosen.length !== 1) throw new UsageError('replay takes exactly one of --id ID, --install I, --all');
  const id = f.id === undefined ? undefined : String(f.id);
  if (id !== undefined && !/^\d{1,18}$/.test(id)) throw new UsageError('--id must be a dead letter id (a number)');
  const installId = uuidFlag(f, 'install');

  const [
    { jetstream },
    { loadConfig },
    { names: makeNames },
    { connectNatsOnce },
    { createSeal },
    { migrate },
    wiring,
  ] = await Promise.all([
    import('@nats-io/jetstream'),
    import('../config.js'),
    import('../runtime/names.js'),
    import('../runtime/nats-connect.js'),
    import('../runtime/seal.js'),
    import('../store/migrate.js'),
    import('../wiring/replay-dead-letters.js'),
  ]);
  const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
  const pool = await operatorPool(config);
  let nc;
  try {
    nc = await connectNatsOnce(config.natsServers, config.nats, 'connectors-dead-letters');
  } catch (err) {
    await pool.end();
    throw err;
  }
  try {
    await migrate(pool);
    const out = await wiring.replayDeadLetters(
      {
        db: pool,
        js: jetstream(nc),
        names: makeNames(config.namespace),
        seal: createSeal([config.masterKey!, ...config.security.previousMasterKeys]),
      },
      // INTERFACE §10.5: audited like the route's replay; no API key did it (`key_id` null), and
      // the command's run is its request (`cli-<uuid>`), as for `api-keys create`.
      {
        id,
        installId,
        audit: { action: 'dead_letter_replay', keyId: null, requestId: `cli-${randomUUID()}`, target: null },
      },
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

function uuidFlag(f: Values, name: string): string | undefined {
  const v = f[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !UUID.test(v)) throw new UsageError(`--${name} must be an id (uuid)`);
  return v.toLowerCase();
}
