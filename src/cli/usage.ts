/** Usage text for `connectors --help` and `connectors <command> --help` (INTERFACE §9.1). */
import type { Command } from './command.js';

function synopsis(c: Command): string {
  const opts = Object.entries(c.options).map(([k, o]) => {
    const flag = o.type === 'boolean' ? `--${k}` : `--${k} ${o.value ?? 'VALUE'}`;
    return o.required ? flag : `[${flag}]`;
  });
  return [c.name, ...opts].join(' ');
}

export function overallUsage(commands: Command[]): string {
  const rows = commands.map((c) => [synopsis(c), c.summary] as const);
  const width = Math.max(...rows.map(([s]) => s.length));
  return [
    'usage: connectors <command> [options]',
    '',
    'commands:',
    ...rows.map(([s, d]) => `  ${s.padEnd(width)}  ${d}`),
    '',
    '`connectors <command> --help` describes one command; `connectors --version` prints the version.',
  ].join('\n');
}

/** The groups of commands: the first word of every command of two words (`tenants`, `api-keys`...). */
export function commandGroups(commands: Command[]): string[] {
  return [...new Set(commands.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]!))];
}

/** `connectors <group> --help`: the group's subcommands, each with its synopsis. */
export function groupUsage(group: string, commands: Command[]): string {
  const rows = commands.filter((c) => c.name.startsWith(`${group} `)).map((c) => [synopsis(c), c.summary] as const);
  const width = Math.max(...rows.map(([s]) => s.length));
  return [
    `usage: connectors ${group} <subcommand> [options]`,
    '',
    'subcommands:',
    ...rows.map(([s, d]) => `  ${s.padEnd(width)}  ${d}`),
    '',
    `\`connectors ${group} <subcommand> --help\` describes one subcommand.`,
  ].join('\n');
}

export function commandUsage(c: Command): string {
  const rows = [
    ...Object.entries(c.options).map(
      ([k, o]) => [o.type === 'boolean' ? `--${k}` : `--${k} ${o.value ?? 'VALUE'}`, o.description] as const,
    ),
    ['--help', 'show this help'] as const,
  ];
  const width = Math.max(...rows.map(([s]) => s.length));
  return [
    `usage: connectors ${synopsis(c)}`,
    '',
    c.summary,
    '',
    'options:',
    ...rows.map(([s, d]) => `  ${s.padEnd(width)}  ${d}`),
  ].join('\n');
}
