/**
 * Runs one actor's handlers in a unit test without the kernel: a context around a state,
 * and a ticker that records what it was armed with instead of firing (the test then
 * delivers the next tick itself, so nothing sleeps).
 */
import pino from 'pino';
import type { ActorContext } from '../../src/runtime/actor-definition.js';
import type { ActorKey } from '../../src/runtime/names.js';
import type { Ticker } from '../../src/runtime/ticker.js';

export interface RecordingTicker extends Ticker {
  /** Every delay armed, in order. */
  readonly armed: number[];
  cancelled: number;
}

function recordingTicker(): RecordingTicker {
  const t = {
    armed: [] as number[],
    cancelled: 0,
    dueAt: null as number | null,
    arm(ms: number) {
      t.armed.push(ms);
      t.dueAt = ms;
    },
    cancel() {
      t.cancelled++;
      t.dueAt = null;
    },
    stop() {
      t.dueAt = null;
    },
  };
  return t;
}

export function actorContext<S>(key: ActorKey, state: S): ActorContext<S> {
  return { key, state, signal: new AbortController().signal, deadline: Infinity, log: pino({ level: 'silent' }) };
}

/**
 * Hydrates `def` for `key` with its ticker swapped for a recording one: the state, that
 * ticker, and a context around the state to call its handlers with.
 */
export async function hydrateRecording<S extends { ticker: Ticker }>(
  def: { hydrate(key: ActorKey, signal: AbortSignal): Promise<S> },
  key: ActorKey,
): Promise<{ state: S; ticker: RecordingTicker; ctx: ActorContext<S> }> {
  const state = await def.hydrate(key, new AbortController().signal);
  state.ticker.stop();
  const ticker = recordingTicker();
  state.ticker = ticker;
  return { state, ticker, ctx: actorContext(key, state) };
}
