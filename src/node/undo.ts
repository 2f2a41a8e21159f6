/**
 * What a node started, newest last, and how each part stops: a failed start undoes it
 * (INTERFACE §9.1: exits within 15 s and leaves nothing running) and a graceful stop runs
 * the same list, so a node always stops in the reverse of its start order.
 */
import type { Logger } from '../log.js';

interface Started {
  name: string;
  /** Undoes the part (a failed start; a graceful stop too, unless `stop` is given). */
  fn: () => Promise<unknown>;
  /** A graceful stop where it differs from the undo (NATS: drain rather than close). */
  stop?: () => Promise<unknown>;
}
export type Undo = Started[];

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

/** A graceful stop of what started, newest first: a failing or hanging step is logged and passed. */
export async function stopAll(log: Logger, started: Undo): Promise<void> {
  const step = stopStep(log);
  for (const u of [...started].reverse()) await step(u.name, u.stop ?? u.fn);
}

/** One step of a graceful stop: a failure or a hang is logged and the stop goes on. */
function stopStep(log: Logger): (name: string, fn: () => Promise<unknown>) => Promise<void> {
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
