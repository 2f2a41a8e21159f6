/**
 * The command line of `npm run chaos` (run.ts has the usage), read and checked before
 * anything starts.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { commandLine } from '../ingest/bench-args.js';
import { TITLES, type ScenarioId } from './scenarios.js';

/** The flags `npm run chaos` takes (the docs' commands are checked against them). */
export const CHAOS_OPTIONS = {
  quick: { type: 'boolean', default: false },
  only: { type: 'string', default: 'a,b,c,d,e' },
  rate: { type: 'string', default: '30' },
  installs: { type: 'string', default: '4' },
  slash: { type: 'string', default: '10' },
  /** Node and nats-server kills of (a) and (b), whatever the scale (moderate runs on a busy machine). */
  kills: { type: 'string' },
  /** Append the run's line (bench/results/chaos-result.ts) to this file. */
  results: { type: 'string' },
  note: { type: 'string' },
} satisfies NonNullable<ParseArgsConfig['options']>;

export interface ChaosArgs {
  quick: boolean;
  ids: ScenarioId[];
  rate: number;
  installs: number;
  slash: number;
  /** null: the scale's own kill counts. */
  kills: number | null;
  results: { file: string; note: string | null } | null;
  /** The command as run, without `--results` and `--note`. */
  command: string;
}

export function readChaosArgs(argv = process.argv.slice(2)): ChaosArgs {
  const { values } = parseArgs({ args: argv, options: CHAOS_OPTIONS });
  const ids = values.only.split(',').map((s) => s.trim()) as ScenarioId[];
  if (ids.some((id) => !(id in TITLES))) throw new Error('--only takes a comma-separated list of a, b, c, d, e');
  return {
    quick: values.quick,
    ids,
    rate: Number(values.rate),
    installs: Number(values.installs),
    slash: Number(values.slash),
    kills: values.kills === undefined ? null : Number(values.kills),
    results: values.results ? { file: values.results, note: values.note ?? null } : null,
    command: commandLine('npm run chaos', argv, ['results', 'note']),
  };
}
