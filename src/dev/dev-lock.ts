/**
 * One `connectors dev` per data directory (issue 34): `dev.lock` in the directory names the
 * process that uses it (pid and start time, so a reused pid is not mistaken for it). A second
 * `dev` on the directory refuses in one line and touches nothing; a lock whose process is gone
 * (killed with SIGKILL) is stale and taken over. An owner that is stopping says so in the lock,
 * and a newcomer waits for it (bounded) instead of refusing, so `kill %1` followed by a new
 * start works.
 *
 * The lock is created complete or not at all (written aside, then hard-linked into place,
 * which fails if the name exists). Two starts racing over the same stale lock within a few
 * microseconds could both take it; the embedded Postgres' own lock (`postmaster.pid`) still
 * refuses the second server.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/ports.js';
import { processId, stillRunning, type ProcessId } from './proc-stat.js';

export const LOCK_FILE = 'dev.lock';
/** How long a newcomer waits for a stopping owner (its Postgres and NATS stop within 15 s each). */
const STOPPING_WAIT_MS = 40_000;
const POLL_MS = 200;
/** Real time whose timers keep the process alive: while it waits for the lock, nothing else may. */
const waitingClock: Clock = { ...systemClock, setTimeout: (fn, ms) => setTimeout(fn, ms) };

interface LockContent extends ProcessId {
  nonce: string;
  stopping: boolean;
}

export interface DevLock {
  /** Tells newcomers this owner is on its way out (they wait instead of refusing). */
  stopping(): void;
  /** Removes the lock if it is still ours. Idempotent and synchronous (safe in an 'exit' hook). */
  release(): void;
}

/** The directory is used by another running `dev`: one line, naming it and the process. */
export class DevDirInUse extends Error {
  constructor(dir: string, pid: number, stopping: boolean) {
    super(
      stopping
        ? `another \`connectors dev\` (pid ${pid}) is still stopping on ${dir}; try again when it has exited`
        : `another \`connectors dev\` (pid ${pid}) is running on ${dir}; stop it first, or set ` +
            `SERVICE_DEV_DIR to another directory`,
    );
    this.name = 'DevDirInUse';
  }
}

export async function acquireDevLock(dir: string, clock: Clock = waitingClock): Promise<DevLock> {
  const path = join(dir, LOCK_FILE);
  const mine: LockContent = { ...processId(process.pid), nonce: randomBytes(8).toString('hex'), stopping: false };
  const waitUntil = clock.now() + STOPPING_WAIT_MS;
  for (;;) {
    if (tryCreate(path, mine)) break;
    const owner = readLock(path);
    if (owner === null) continue; // removed between our attempt and the read: try again
    if (!stillRunning(owner)) {
      removeIf(path, owner.nonce);
      continue;
    }
    if (!owner.stopping || clock.now() >= waitUntil) throw new DevDirInUse(dir, owner.pid, owner.stopping);
    await new Promise<void>((r) => clock.setTimeout(r, POLL_MS));
  }
  let released = false;
  return {
    stopping() {
      if (released || readLock(path)?.nonce !== mine.nonce) return;
      // Replaced in one rename: the name never stops existing, so nobody can slip in.
      const aside = `${path}.${mine.nonce}`;
      writeFileSync(aside, JSON.stringify({ ...mine, stopping: true }), { mode: 0o600 });
      renameSync(aside, path);
    },
    release() {
      if (released) return;
      released = true;
      removeIf(path, mine.nonce);
    },
  };
}

function tryCreate(path: string, content: LockContent): boolean {
  const aside = `${path}.${content.nonce}`;
  writeFileSync(aside, JSON.stringify(content), { mode: 0o600 });
  try {
    linkSync(aside, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(aside, { force: true });
  }
}

function readLock(path: string): LockContent | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const v = JSON.parse(text) as Partial<LockContent>;
    if (typeof v.pid === 'number' && typeof v.nonce === 'string') {
      return { pid: v.pid, startTime: v.startTime ?? null, nonce: v.nonce, stopping: v.stopping === true };
    }
  } catch {
    // not ours to read: treated as a lock of nobody below
  }
  // A file we cannot read as a lock names no live process: stale.
  return { pid: 0, startTime: null, nonce: '', stopping: false };
}

function removeIf(path: string, nonce: string): void {
  const now = readLock(path);
  if (now === null || now.nonce !== nonce) return;
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
