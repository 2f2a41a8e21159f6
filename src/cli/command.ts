/**
 * The shape of one `connectors` command (INTERFACE §1, §9.1). Each command lives in its
 * own file under `src/cli/` and is listed once in `registry.ts`; `src/cli.ts` parses the
 * arguments from `options`, answers `--help` from `summary`/`options`, and calls `run`.
 * A command's module imports only what its usage needs; `run` imports the service's modules
 * it works with, so `--help` starts in a fraction of the time a node takes to load.
 */
import type pg from 'pg';
import type { Config } from '../config.js';

interface CommandOption {
  type: 'string' | 'boolean';
  description: string;
  /** A string option the command cannot run without. */
  required?: boolean;
  /** Placeholder shown in usage, e.g. `NAME`. */
  value?: string;
}

export interface Command {
  /** Words after `connectors`, e.g. `tenants create`. */
  name: string;
  summary: string;
  options: Record<string, CommandOption>;
  run(values: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): Promise<void>;
}

/** Bad arguments: exit 2 with the message and the command's usage on stderr (INTERFACE §9.1). */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: Command,
    /** A command group (`tenants`) whose usage answers, when no one command was named. */
    readonly group?: string,
  ) {
    super(message);
  }
}

export function print(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

/** Runs `fn` on a pool whose schema is brought up to date first (nothing to provision by hand). */
export async function withPool(config: Readonly<Config>, fn: (pool: pg.Pool) => Promise<void>): Promise<void> {
  const [{ createPool }, { migrate }] = await Promise.all([import('../store/db.js'), import('../store/migrate.js')]);
  // Operator commands work across tenants: they run as the schema owner (the migration
  // role) when one is configured (README "Security model").
  const pool = createPool(config.security.migrateDatabaseUrl ?? config.databaseUrl!);
  try {
    await migrate(pool);
    await fn(pool);
  } finally {
    await pool.end();
  }
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
