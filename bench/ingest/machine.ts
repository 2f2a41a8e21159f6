/** What the figures were measured on, for docs/performance.md. */
import { cpus, loadavg, totalmem } from 'node:os';
import type pg from 'pg';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  natsServer: string;
  postgres: string;
  loadAvg1mAtStart: number;
}

export async function describeMachine(pool: pg.Pool, natsVersion: string): Promise<Machine> {
  const { rows } = await pool.query<{ v: string }>("SELECT current_setting('server_version') AS v");
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    natsServer: natsVersion,
    postgres: rows[0]?.v ?? 'unknown',
    loadAvg1mAtStart: Math.round(loadavg()[0]! * 100) / 100,
  };
}
