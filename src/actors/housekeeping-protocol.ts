/**
 * The contract of the housekeeping actor (housekeeping.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../runtime/ports.js';

export const HOUSEKEEPING_KIND = 'housekeeping';

/** Rows a pass deleted, by table (a table with none is absent). */
export type PassOutcome = Record<string, number>;

/** `resume` arms the next pass when none is pending; `tick` runs one pass and arms the next. */
export type HousekeepingProtocol = {
  resume: { msg: object; answer: { ok: true } };
  tick: { msg: object; answer: { ok: boolean; deleted?: PassOutcome } };
};

/** One actor for the whole deployment: the lease of the shard this key hashes to is its lease. */
export const housekeepingKey: KeyOf<HousekeepingProtocol> = { kind: HOUSEKEEPING_KIND, id: ['retention'] };
