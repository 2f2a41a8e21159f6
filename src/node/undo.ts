/**
 * Undoing a half-started node and stopping a running one, each step bounded
 * (INTERFACE §9.1: a failed start exits within 15 s and leaves nothing running).
 */
import type { Logger } from '../log.js';

export type Undo = Array<{ name: string; fn: () => Promise<unknown> }>;

/** INTERFACE §9.1: a failed start exits within 15 s, so each undo step gets a few seconds at most. */
const UNDO_STEP_TIMEOUT_MS = 3_000;
/** A handler that ignores its abort signal must not hold a stopping node forever. */
const STOP_STEP_TIMEOUT_MS = 20_000;

/** Runs what a failed start had started, newest first, ignoring failures. */
export async function undoAll(undo: Undo): Promise<void> {
  for (const u of [...undo].reverse()) {
    await Promise.race([
      u.fn().catch(() => undefined),
      new Promise((r) => setTimeout(r, UNDO_STEP_TIMEOUT_MS).unref()),
    ]);
  }
}

/** One step of a graceful stop: a failure or a hang is logged and the stop goes on. */
export function stopStep(log: Logger): (name: string, fn: () => Promise<unknown>) => Promise<void> {
  return async (name, fn) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        log.warn({ step: name }, 'stop step timed out; going on');
        resolve();
      }, STOP_STEP_TIMEOUT_MS);
    });
    await Promise.race([fn().catch((err: unknown) => log.warn({ err, step: name }, 'stop step failed')), timeout]);
    clearTimeout(timer);
  };
}
