/**
 * Whether a process still runs (signal 0 probes without sending anything). ESRCH means
 * gone; EPERM means the pid now belongs to someone else's process, so ours is gone too.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
