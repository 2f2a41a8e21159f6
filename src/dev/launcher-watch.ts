/**
 * `dev` ends with npm when npm launched it (issue 34). `npx connectors dev` and npm scripts run
 * the command through `sh -c`: a SIGTERM or SIGINT to npx is passed to that shell only, which
 * dies without passing it on, and a SIGKILL of npx reaches nobody. Either way `dev` would keep
 * serving with its Postgres and nats-server, reparented to init. So, when npm's environment says
 * npm started us, we watch our parent and, when the parent is a shell, its parent too (npm),
 * and treat the end of either as a stop signal: the same orderly stop as SIGTERM.
 *
 * Run directly (`node bin/connectors.js dev`, a global install) nothing is watched: signals
 * reach the process itself, and `nohup connectors dev &` outlives its shell as a server should.
 */
import { procStat, processId, stillRunning, type ProcessId } from './proc-stat.js';

const POLL_MS = 500;
const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ash', 'ksh']);

export interface LauncherWatch {
  /** Resolves when a watched launcher is gone; never when nothing is watched. */
  gone: Promise<void>;
  /** The processes watched (empty when not launched by npm). */
  watched: ProcessId[];
  stop(): void;
}

export function watchLauncher(env: NodeJS.ProcessEnv, pid = process.pid): LauncherWatch {
  const watched = launchers(env, pid);
  let timer: NodeJS.Timeout | null = null;
  const gone = new Promise<void>((resolve) => {
    if (watched.length === 0) return;
    timer = setInterval(() => {
      if (watched.every(stillRunning)) return;
      clearInterval(timer!);
      resolve();
    }, POLL_MS);
    // It bounds nothing of its own: the process ends when its work ends, watch or not.
    timer.unref();
  });
  return { gone, watched, stop: () => timer && clearInterval(timer) };
}

function launchers(env: NodeJS.ProcessEnv, pid: number): ProcessId[] {
  if (!env.npm_execpath && !env.npm_command) return [];
  const self = procStat(pid);
  const ppid = self?.ppid ?? process.ppid;
  if (ppid <= 1) return [];
  const parent = processId(ppid);
  const up = procStat(ppid);
  if (up === null || !SHELLS.has(up.comm) || up.ppid <= 1) return [parent];
  return [parent, processId(up.ppid)];
}
