/**
 * A server child must not outlive `dev`, however `dev` dies (issue 34). An 'exit' hook misses
 * SIGKILL, so a tiny `sh` guard holds the read end of a pipe whose write end only we hold: when
 * we exit by any means the kernel closes it, the guard reads EOF and signals the server. An
 * orderly stop releases the guard first (a `release` line), so it never signals a pid that has
 * since been reused; and it signals only while the server's own pid file still names that pid.
 * The guard leads its own process group, so a terminal's Ctrl-C does not take it away while
 * `dev` drains. (nats-child.ts runs the nats-server under a guard of the same kind that also
 * waits for it; the embedded Postgres is started by its package, so this one watches a pid.)
 */
import { spawn } from 'node:child_process';

const GUARD = `while read -r line; do [ "$line" = release ] && exit 0; done
[ "$(head -n 1 "$2" 2>/dev/null)" = "$1" ] && kill -"$3" "$1" 2>/dev/null
exit 0`;

export interface OrphanGuard {
  /** Our stop is orderly from here on: the guard exits without signalling. */
  release(): void;
}

/**
 * Guards server `pid`, whose pid file `pidFile` starts with its pid while it runs, sending it
 * `signal` if this process ends without `release()`.
 */
export function guardOrphan(pid: number, pidFile: string, signal: 'INT' | 'TERM'): OrphanGuard {
  const guard = spawn('/bin/sh', ['-c', GUARD, 'dev-orphan-guard', String(pid), pidFile, signal], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  // A write after the guard died (someone killed it) must not crash us.
  guard.stdin!.on('error', () => undefined);
  guard.on('error', () => undefined);
  guard.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      guard.stdin!.end('release\n');
    },
  };
}
