/**
 * CPU used by the shared services a run leans on (issue 12, Targets: CPU per event per
 * process): nats-server and Postgres. They are not our children, so they are found by
 * command name in /proc; for Postgres every `postgres` process is summed (backends,
 * walwriter, checkpointer): on a machine given to the bench that is the bench database's
 * cost, and on a shared one it is an upper bound.
 */
import { readdir, readFile } from 'node:fs/promises';

/** USER_HZ: 100 on Linux on every architecture we run on (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_S = 100;

/** CPU ms (user + system) of one pid so far, with its command name; null once it has exited. */
async function pidCpu(pid: string): Promise<{ comm: string; ms: number } | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  // Fields after the command name start at field 3 (`state`); utime, stime are 14 and 15.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { comm, ms: ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS_PER_S };
}

export interface SystemCpu {
  natsServerMs: number;
  postgresMs: number;
  /** Per pid, so a backend that exits between two readings is not counted as negative. */
  postgresByPid: Map<string, number>;
}

export async function systemCpu(): Promise<SystemCpu> {
  const pids = (await readdir('/proc')).filter((p) => /^\d+$/.test(p));
  const out: SystemCpu = { natsServerMs: 0, postgresMs: 0, postgresByPid: new Map() };
  for (const pid of pids) {
    const c = await pidCpu(pid);
    if (c === null) continue;
    if (c.comm === 'nats-server') out.natsServerMs += c.ms;
    else if (c.comm === 'postgres') {
      out.postgresMs += c.ms;
      out.postgresByPid.set(pid, c.ms);
    }
  }
  return out;
}

/** CPU ms used between two readings; Postgres backends started meanwhile count in full. */
export function systemCpuUsed(before: SystemCpu, after: SystemCpu): { natsServerMs: number; postgresMs: number } {
  let postgresMs = 0;
  for (const [pid, ms] of after.postgresByPid) postgresMs += ms - (before.postgresByPid.get(pid) ?? 0);
  return { natsServerMs: after.natsServerMs - before.natsServerMs, postgresMs };
}
