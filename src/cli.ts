/**
 * The `connectors` command (INTERFACE §1). Success: exit 0 and, where a command prints,
 * one JSON line on stdout. Bad arguments or config: non-zero exit and one clear line on
 * stderr naming the setting or argument (never a secret's value).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger } from './log.js';
import { startNode, type Role } from './node.js';
import { createPool } from './store/db.js';
import { migrate } from './store/migrate.js';
import { createTenant } from './store/tenants.js';
import { createUser } from './store/users.js';
import { runDev } from './dev/run-dev.js';
import { stopSignal } from './signals.js';
import { deadLettersCommand } from './cli/dead-letters.js';
import { UsageError } from './cli/usage-error.js';

const USAGE = `usage: connectors <command>
  serve [--roles edge,actors]          run one node (default: both roles)
  migrate                              apply Postgres migrations
  tenants create --name NAME           create a tenant; prints {"tenant_id","api_key"}
  users create --tenant ID --email E   create a user; prints {"user_id"}
  dev                                  everything on this machine with embedded defaults
  dead-letters list [--tenant T] [--install I]           list dead letters, one JSON line each
  dead-letters replay (--id ID | --install I | --all)    put them back on the ingest path`;

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  try {
    await run(argv, env);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`connectors: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    const e = err as { code?: string; message?: string };
    process.stderr.write(`connectors: ${(e.message ?? String(err)).split('\n')[0]}\n`);
    process.exitCode = 1;
    // INTERFACE §9.1: a command that could not start leaves nothing running. What it had
    // started is stopped by now (startNode and dev undo their steps); a handle some
    // library still holds must not keep the process alive.
    if (argv[0] === 'serve' || argv[0] === 'dev') process.exit(1);
  }
}

async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [cmd, sub, ...rest] = argv;
  switch (cmd) {
    case 'serve':
      return serve(
        [sub, ...rest].filter((a): a is string => a !== undefined),
        env,
      );
    case 'migrate': {
      noArgs([sub, ...rest]);
      const config = loadConfig(env, { requireDatabase: true });
      const pool = createPool(config.databaseUrl!);
      try {
        print(await migrate(pool));
      } finally {
        await pool.end();
      }
      return;
    }
    case 'tenants': {
      if (sub !== 'create')
        throw new UsageError(
          `unknown tenants command ${JSON.stringify(sub ?? '')}; expected: tenants create --name NAME`,
        );
      const { name } = flags(rest, { name: true }) as { name: string };
      if (name.trim().length === 0 || name.length > 200) throw new UsageError('--name must be 1-200 characters');
      const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
      await withPool(config, async (pool) => print(await createTenant(pool, config.masterKey!, name.trim())));
      return;
    }
    case 'users': {
      if (sub !== 'create')
        throw new UsageError(
          `unknown users command ${JSON.stringify(sub ?? '')}; expected: users create --tenant ID --email EMAIL`,
        );
      const f = flags(rest, { tenant: true, email: true }) as { tenant: string; email: string };
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(f.tenant))
        throw new UsageError('--tenant must be a tenant id (uuid)');
      const config = loadConfig(env, { requireDatabase: true });
      await withPool(config, async (pool) => print(await createUser(pool, f.tenant.toLowerCase(), f.email)));
      return;
    }
    case 'dead-letters':
      return deadLettersCommand(
        [sub, ...rest].filter((a): a is string => a !== undefined),
        env,
      );
    case 'dev':
      noArgs([sub, ...rest]);
      return runDev(env);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      if (cmd === undefined) process.exitCode = 2;
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(cmd)}; run \`connectors --help\``);
  }
}

async function serve(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { roles: rolesArg } = flags(args, { roles: false }) as { roles?: string };
  const roles = parseRoles(rolesArg ?? 'edge,actors');
  const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
  const log = createLogger({ level: config.logLevel, node: config.nodeId });
  const stop = stopSignal();
  const node = await startNode(config, { roles, log });
  await stop;
  await node.stop();
}

export function parseRoles(v: string): Role[] {
  const roles = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (roles.length === 0 || roles.some((r) => r !== 'edge' && r !== 'actors')) {
    throw new UsageError('--roles must be a comma-separated list of edge, actors');
  }
  return [...new Set(roles)] as Role[];
}

function flags(args: string[], spec: Record<string, boolean>): Record<string, string | undefined> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: Object.fromEntries(Object.keys(spec).map((k) => [k, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!);
  }
  for (const [k, required] of Object.entries(spec)) {
    if (required && parsed.values[k] === undefined) throw new UsageError(`--${k} is required`);
  }
  return parsed.values as Record<string, string | undefined>;
}

function noArgs(args: Array<string | undefined>): void {
  const extra = args.filter((a) => a !== undefined);
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
}

async function withPool(
  config: Readonly<Config>,
  fn: (pool: ReturnType<typeof createPool>) => Promise<void>,
): Promise<void> {
  const pool = createPool(config.databaseUrl!);
  try {
    // Nothing to provision by hand: the schema is brought up to date first (idempotent).
    await migrate(pool);
    await fn(pool);
  } finally {
    await pool.end();
  }
}

function print(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}
