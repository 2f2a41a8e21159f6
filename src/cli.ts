/**
 * The `connectors` command (INTERFACE §1, §9.1). Success: exit 0 and, where a command
 * prints, one JSON line on stdout. `--help` (overall, per command group such as `tenants`,
 * or per command) goes to stdout with exit 0; `--version` prints the package version. An
 * unknown command or flag, a missing or bad argument: the problem and the usage on stderr,
 * exit 2. A bad setting: one line naming it (never its value), exit 2. Commands live in
 * `src/cli/`, listed in its registry.
 */
import { parseArgs } from 'node:util';
import { UsageError, type Command } from './cli/command.js';
import { COMMANDS } from './cli/registry.js';
import { commandGroups, commandUsage, groupUsage, overallUsage } from './cli/usage.js';
import { packageVersion } from './version.js';

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  try {
    await run(argv, env);
  } catch (err) {
    if (err instanceof UsageError) {
      const usage = err.command
        ? commandUsage(err.command)
        : err.group
          ? groupUsage(err.group, COMMANDS)
          : overallUsage(COMMANDS);
      process.stderr.write(`connectors: ${err.message}\n\n${usage}\n`);
      process.exitCode = 2;
      return;
    }
    // Loaded only here: --help and --version must not load the service's settings module.
    const { ConfigError } = await import('./config.js');
    if (err instanceof ConfigError) {
      process.stderr.write(`connectors: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    const e = err as { message?: string };
    process.stderr.write(`connectors: ${(e.message ?? String(err)).split('\n')[0]}\n`);
    process.exitCode = 1;
    // INTERFACE §9.1: a command that could not start leaves nothing running. What it had
    // started is stopped by now (startNode and dev undo their steps); a handle some
    // library still holds must not keep the process alive.
    if (argv[0] === 'serve' || argv[0] === 'dev') process.exit(1);
  }
}

async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [first] = argv;
  if (first === '--version' || first === '-v') {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(`${overallUsage(COMMANDS)}\n`);
    return;
  }
  if (first === undefined) throw new UsageError('no command given');
  const command = findCommand(argv);
  if (!command) {
    // INTERFACE §9.1: `<group> --help` is a command's help too: the group's subcommands, exit 0.
    const group = commandGroups(COMMANDS).find((g) => g === first) ?? null;
    if (group !== null && argv.length === 2 && (argv[1] === '--help' || argv[1] === '-h')) {
      process.stdout.write(`${groupUsage(group, COMMANDS)}\n`);
      return;
    }
    const words = JSON.stringify(argv.filter((a) => !a.startsWith('-')).join(' '));
    if (group !== null) {
      const missing = argv.slice(1).every((a) => a.startsWith('-'));
      throw new UsageError(missing ? `${group} needs a subcommand` : `unknown command ${words}`, undefined, group);
    }
    throw new UsageError(`unknown command ${words}`);
  }
  const rest = argv.slice(command.name.split(' ').length);
  const values = parseOptions(command, rest);
  if (values.help === true) {
    process.stdout.write(`${commandUsage(command)}\n`);
    return;
  }
  await command.run(values, env);
}

/** The command whose words start `argv` (the longest match, so `tenants create` beats `tenants`). */
function findCommand(argv: string[]): Command | undefined {
  return COMMANDS.filter((c) => {
    const words = c.name.split(' ');
    return words.every((w, i) => argv[i] === w);
  }).sort((a, b) => b.name.length - a.name.length)[0];
}

function parseOptions(command: Command, args: string[]): Record<string, string | boolean | undefined> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        ...Object.fromEntries(Object.entries(command.options).map(([k, o]) => [k, { type: o.type }])),
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!, command);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help === true) return values;
  for (const [k, o] of Object.entries(command.options)) {
    if (o.required && values[k] === undefined) throw new UsageError(`--${k} is required`, command);
  }
  return values;
}
