/**
 * `dev` ends with npm when npm launched it (issue 34). `npx connectors dev` and npm scripts run
 * the command through `sh -c`, and npm passes a SIGINT or SIGTERM it receives to that shell
 * only: on SIGTERM the shell dies without passing it on, a SIGKILL of npm reaches nobody, and
 * Debian's sh (dash) holds a SIGINT until its child exits. Either way `dev` would keep serving
 * with its Postgres and nats-server. So, when npm's environment says npm started us, we watch
 * our parent and, when the parent is a shell, its parent too (npm), and treat as a stop signal:
 *
 * - either of them gone (the shell killed by SIGTERM, npm by anything);
 * - the shell woken up. Between npm and us it only sleeps in wait() for us; what wakes it is a
 *   signal it catches (SIGINT; the others kill it) or a change of our own state (stopped and
 *   continued: Ctrl-Z, then `fg`). A wakeup is confirmed one poll later unless we were
 *   continued (SIGCONT) meanwhile, so job control does not stop the server.
 *
 * Run directly (`node bin/connectors.js dev`, a global install) nothing is watched: signals
 * reach the process itself, and `nohup connectors dev &` outlives its shell as a server should.
 * Without /proc (macOS) only the liveness of the two is watched; there sh is bash, which runs
 * the command in its own place, so npm's signal reaches us directly.
 */
import { readFileSync } from 'node:fs';
import { procStat, processId, stillRunning, voluntarySwitches, type ProcessId } from './proc-stat.js';

const POLL_MS = 500;
const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ash', 'ksh']);

export interface LauncherWatch {
  /** Resolves when the launcher is gone or was signalled; never when nothing is watched. */
  gone: Promise<void>;
  /** The processes watched (empty when not launched by npm). */
  watched: ProcessId[];
  stop(): void;
}

export function watchLauncher(env: NodeJS.ProcessEnv, pid = process.pid): LauncherWatch {
  const { watched, shell } = launchers(env, pid);
  let timer: NodeJS.Timeout | null = null;
  let continuedAt = 0;
  const onContinue = () => (continuedAt = Date.now());
  const stop = () => {
    if (timer) clearInterval(timer);
    process.removeListener('SIGCONT', onContinue);
  };
  const gone = new Promise<void>((resolve) => {
    if (watched.length === 0) return;
    let wakeups = shell === null ? null : voluntarySwitches(shell.pid);
    let suspect = false;
    process.on('SIGCONT', onContinue);
    timer = setInterval(() => {
      if (watched.every(stillRunning)) {
        const now = shell === null || wakeups === null ? null : voluntarySwitches(shell.pid);
        if (now === null || now === wakeups) return;
        if (Date.now() - continuedAt < 3 * POLL_MS) {
          wakeups = now; // we were stopped and continued: that woke it
          suspect = false;
          return;
        }
        if (!suspect) {
          suspect = true; // confirm on the next poll (a SIGCONT may be on its way)
          return;
        }
      }
      stop();
      resolve();
    }, POLL_MS);
    // It bounds nothing of its own: the process ends when its work ends, watch or not.
    timer.unref();
  });
  return { gone, watched, stop };
}

function launchers(env: NodeJS.ProcessEnv, pid: number): { watched: ProcessId[]; shell: ProcessId | null } {
  if (!env.npm_execpath && !env.npm_command) return { watched: [], shell: null };
  const ppid = procStat(pid)?.ppid ?? process.ppid;
  if (ppid <= 1) return { watched: [], shell: null };
  const parent = processId(ppid);
  const up = procStat(ppid);
  if (up === null || !SHELLS.has(up.comm) || up.ppid <= 1) return { watched: [parent], shell: null };
  // Only a `sh -c` sleeps for us alone; an interactive shell also wakes for a resized window.
  return { watched: [parent, processId(up.ppid)], shell: runsCommandString(ppid) ? parent : null };
}

function runsCommandString(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[1] === '-c';
  } catch {
    return false;
  }
}
