/**
 * What Linux's `/proc/<pid>/stat` says of a process: its parent, and its start time in clock
 * ticks since boot. A pid names a process only while it lives and may be reused afterwards;
 * the pair (pid, start time) names exactly one process, so `dev` records it for the processes
 * it watches (its launcher) and for the one it names in its lock file. Null where there is no
 * such process, or no /proc (macOS): callers then fall back to a liveness probe.
 */
import { readFileSync } from 'node:fs';
import { isAlive } from './is-alive.js';

export interface ProcStat {
  /** Field 3: `R`, `S`, … and `Z` for a zombie (exited, not yet reaped). */
  state: string;
  ppid: number;
  /** Field 22, `starttime`: constant for the life of the process. */
  startTime: number;
  /** Field 2, `comm`: the executable's name, at most 15 characters. */
  comm: string;
}

export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid … starttime …": comm may hold spaces and parentheses, so the
  // fields are counted from the last ')'; after it, field 3 (state) is index 0.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  const ppid = Number(fields[1]);
  const startTime = Number(fields[19]);
  if (!Number.isInteger(ppid) || !Number.isInteger(startTime)) return null;
  return { state: fields[0]!, ppid, startTime, comm: text.slice(text.indexOf('(') + 1, close) };
}

/** One process, named so that a reused pid is not mistaken for it. */
export interface ProcessId {
  pid: number;
  /** Null where /proc is not available. */
  startTime: number | null;
}

export function processId(pid: number): ProcessId {
  return { pid, startTime: procStat(pid)?.startTime ?? null };
}

/** Whether that very process still runs (a zombie counts as gone: it serves nothing). */
export function stillRunning(p: ProcessId): boolean {
  if (!Number.isInteger(p.pid) || p.pid <= 0) return false; // kill(0) would probe our own group
  if (p.startTime === null) return isAlive(p.pid);
  const now = procStat(p.pid);
  return now !== null && now.startTime === p.startTime && now.state !== 'Z';
}

/**
 * How many times the process has gone to sleep of its own accord (`voluntary_ctxt_switches`
 * in /proc/<pid>/status): a process blocked in wait() adds one each time something wakes it.
 * Null without /proc.
 */
export function voluntarySwitches(pid: number): number | null {
  try {
    const m = /^voluntary_ctxt_switches:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
