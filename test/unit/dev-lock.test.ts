/**
 * One `connectors dev` per data directory (issue 34): the lock refuses while its process
 * runs, is taken over once that process is gone (or its pid names another process now), and
 * makes a newcomer wait for an owner that said it is stopping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { acquireDevLock, DevDirInUse, LOCK_FILE } from '../../src/dev/dev-lock.js';
import { processId } from '../../src/dev/proc-stat.js';
import { ManualClock } from '../support/clock.js';

const dir = mkdtempSync(join(tmpdir(), 'connectors-lock-'));
const lockPath = join(dir, LOCK_FILE);
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  rmSync(lockPath, { force: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Another live process to name in a lock (a lock naming ourselves would be our own). */
function otherProcess(): number {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  return child.pid!;
}

function writeLock(content: Record<string, unknown>): void {
  writeFileSync(lockPath, JSON.stringify({ nonce: 'theirs', stopping: false, ...content }));
}

describe('dev lock', () => {
  it('refuses in one line while the process named in it runs, and leaves its lock alone', async () => {
    const pid = otherProcess();
    writeLock({ ...processId(pid) });
    const err = await acquireDevLock(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DevDirInUse);
    expect((err as Error).message).toContain(`pid ${pid}`);
    expect((err as Error).message).not.toContain('\n');
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).nonce).toBe('theirs');
  });

  it('takes over a lock whose process is gone, and releases only its own', async () => {
    const child = spawn('true', { stdio: 'ignore' });
    const id = processId(child.pid!);
    await new Promise((r) => child.once('exit', r));
    writeLock({ ...id });
    const lock = await acquireDevLock(dir);
    const mine = JSON.parse(readFileSync(lockPath, 'utf8'));
    expect(mine.pid).toBe(process.pid);
    lock.release();
    expect(existsSync(lockPath)).toBe(false);
  });

  it('takes over a lock whose pid now names another process (start time differs)', async () => {
    const pid = otherProcess();
    const { startTime } = processId(pid);
    if (startTime === null) return; // no /proc here: a pid is all there is to compare
    writeLock({ pid, startTime: startTime - 1 });
    const lock = await acquireDevLock(dir);
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('a second acquire in the same directory refuses while the first holds it', async () => {
    const first = await acquireDevLock(dir);
    // Our own pid is in the lock and alive: the second holder is refused like any other.
    await expect(acquireDevLock(dir)).rejects.toBeInstanceOf(DevDirInUse);
    first.release();
    const second = await acquireDevLock(dir);
    second.release();
  });

  it('waits for an owner that is stopping, and takes the lock once it is gone', async () => {
    const pid = otherProcess();
    writeLock({ ...processId(pid), stopping: true });
    let acquired = false;
    const clock = new ManualClock();
    const waiting = acquireDevLock(dir, clock).then((l) => {
      acquired = true;
      return l;
    });
    // Three polls (200 ms apart) while its owner runs: the lock is still theirs, and a fourth poll is due.
    await clock.advance(600);
    expect(acquired).toBe(false);
    expect(clock.pending).toBe(1);
    const gone = new Promise((r) => children[0]!.once('exit', r));
    children[0]!.kill('SIGKILL');
    await gone;
    await clock.advance(200);
    const lock = await waiting;
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('marks itself stopping without ever leaving the name free', async () => {
    const lock = await acquireDevLock(dir);
    lock.stopping();
    const content = JSON.parse(readFileSync(lockPath, 'utf8'));
    expect(content).toMatchObject({ pid: process.pid, stopping: true });
    lock.release();
    expect(existsSync(lockPath)).toBe(false);
  });
});
