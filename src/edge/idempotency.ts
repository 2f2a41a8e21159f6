/**
 * `Idempotency-Key` on emit and node actions (INTERFACE §9.3). The same key with the same
 * body within 24 hours answers the first call's receipt again and makes no second upstream
 * write, also while the first call is still running and on any node (the claim is a
 * Postgres row, src/store/idempotency-keys.ts); another body answers 409
 * `idempotency_key_reused`. Keys are per tenant.
 *
 * A first call that fails having written nothing gives the key up, so the client's retry
 * with it runs again. One that may have written (the actor took the message but its answer
 * was lost) keeps the claim until its lock passes: a retry waits, then takes it over.
 *
 * Node death between the upstream write and the stored receipt (README "Idempotent
 * writes"): the write actor stores the receipt itself right after the write, and the
 * emitted-event record written with the write carries the key, so a retry that takes over
 * an abandoned claim replays that write instead of making another. The lock outlasts the
 * first call's deadline (the actor starts no message past it and aborts its I/O there),
 * so a takeover never races a first call that is still running.
 *
 * Expired keys are deleted by the housekeeping actor (src/actors/housekeeping.ts).
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import stringify from 'safe-stable-stringify';
import { BadRequest, Conflict, ErrorCodes, Unavailable } from '../errors.js';
import { toAppError } from '../errors-wire.js';
import type { Logger } from '../log.js';
import type { Queryable } from '../store/db.js';
import { IDEMPOTENCY_KEY } from './schemas.js';
import { findEmittedReceipt } from '../store/emitted.js';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../store/idempotency-keys.js';
import { runWithWaitBudget, WaitBudget } from '../wait-budget.js';

/** Longer than any emit can run (25 s budget), so a live first call is never taken over. */
const LOCK_MS = 60_000;
/** How long a duplicate waits for a first call still running before answering 503. */
const WAIT_MS = 30_000;
const POLL_MS = 150;

/** Errors after which the actor may have acted: the claim is kept, never released. */
const MAYBE_ACTED = new Set(['DeadlineExceeded', 'Unavailable']);

export interface IdempotencyDeps {
  db: Queryable;
  log: Logger;
}

/**
 * Runs `call` once per `(tenant, Idempotency-Key)`. `target` names what is acted on (the
 * route and its install or node), `body` the validated request: both make the fingerprint.
 * Without the header, `call` simply runs.
 */
export async function idempotent<T>(
  deps: IdempotencyDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  target: string,
  body: unknown,
  call: (idempotencyKey: string | undefined) => Promise<T>,
): Promise<T> {
  const claim = { tenantId: req.tenantId, key: req.headers['idempotency-key'], target, body };
  return idempotentCall(deps, claim, call, () => reply.header('idempotent-replayed', 'true'));
}

/** One call's claim: the tenant, the key as the caller sent it (absent: no claim), what and with what body. */
export interface IdempotencyClaim {
  tenantId: string;
  key: unknown;
  target: string;
  body: unknown;
}

/**
 * `idempotent` for any caller of the tenant API (the routes above, the MCP tool
 * `act_on_node`, INTERFACE §10.3): `replayed` is told when the answer is the first call's.
 */
export async function idempotentCall<T>(
  deps: IdempotencyDeps,
  { tenantId, key, target, body }: IdempotencyClaim,
  call: (idempotencyKey: string | undefined) => Promise<T>,
  replayed: () => void = () => undefined,
): Promise<T> {
  if (key === undefined) return call(undefined);
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    throw new BadRequest('Idempotency-Key must be 1-255 visible ASCII characters');
  }
  const fingerprint = createHash('sha256')
    .update(stringify({ target, body }) ?? '')
    .digest();
  const deadline = Date.now() + WAIT_MS;
  for (let polls = 0; ; polls++) {
    const claiming = () => claimIdempotencyKey(deps.db, { tenantId, key, fingerprint, lockMs: LOCK_MS });
    // INTERFACE §9.3: waiting for a first call still running is not waiting for Postgres: each
    // poll after a pause has its own 2 s (wait-budget.ts).
    const claim = await (polls === 0 ? claiming() : runWithWaitBudget(new WaitBudget(), claiming));
    if (claim.state === 'mismatch') {
      throw new Conflict('this Idempotency-Key was used with another request body', {
        code: ErrorCodes.idempotencyKeyReused,
      });
    }
    if (claim.state === 'done') {
      replayed();
      return claim.receipt as T;
    }
    if (claim.state === 'claimed') {
      const found = claim.takeover ? await findEmittedReceipt(deps.db, tenantId, key) : null;
      if (found !== null) {
        // The abandoned first call wrote upstream and recorded it, then died before storing
        // its receipt: that write is the answer, not a second one.
        await completeIdempotencyKey(deps.db, tenantId, key, found);
        replayed();
        return found as T;
      }
      return runClaimed(deps, tenantId, key, () => call(key));
    }
    if (Date.now() >= deadline) {
      throw new Unavailable('the first request with this Idempotency-Key is still running', { retryAfterS: 1 });
    }
    await sleep(POLL_MS);
  }
}

async function runClaimed<T>(deps: IdempotencyDeps, tenantId: string, key: string, call: () => Promise<T>) {
  let receipt: T;
  try {
    receipt = await call();
  } catch (err) {
    if (!MAYBE_ACTED.has(toAppError(err).kind)) {
      await releaseIdempotencyKey(deps.db, tenantId, key).catch((e: unknown) =>
        deps.log.warn({ err: e }, 'could not release an Idempotency-Key; it frees itself when its lock passes'),
      );
    }
    throw err;
  }
  // The write happened: a failure to record it is logged, never turned into an error.
  await completeIdempotencyKey(deps.db, tenantId, key, receipt).catch((e: unknown) =>
    deps.log.error({ err: e }, 'could not store the receipt of an Idempotency-Key'),
  );
  return receipt;
}
