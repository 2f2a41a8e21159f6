/**
 * Errors at the service's boundaries (STYLE.md "Errors"): any throw normalised into an
 * `AppError` (a backing service that did not answer becomes a retryable `Unavailable`,
 * INTERFACE §9.3), and the wire form errors take between nodes in actor replies, which
 * keeps kind, code, message, retryAfterS and details, never the cause (causes can hold
 * upstream bodies or secrets).
 */
import {
  AppError,
  type AppErrorOptions,
  type ErrorCode,
  ErrorCodes,
  type ErrorKind,
  Unauthorized,
  Forbidden,
  NotFound,
  BadRequest,
  BadConfig,
  Conflict,
  Gone,
  PayloadTooLarge,
  MethodNotAllowed,
  RequestTimeout,
  UriTooLong,
  HeadersTooLarge,
  RateLimited,
  NotConfigured,
  AdminNotConfigured,
  UpstreamError,
  Unavailable,
  ActorUnavailable,
  ActorOverloaded,
  DeadlineExceeded,
  Internal,
} from './errors.js';

const CONSTRUCTORS: Record<ErrorKind, (message: string, opts: AppErrorOptions) => AppError> = {
  Unauthorized: (m, o) => new Unauthorized(m, o),
  Forbidden: (m, o) => new Forbidden(m, o),
  NotFound: (m, o) => new NotFound(m, o),
  BadRequest: (m, o) => new BadRequest(m, o),
  BadConfig: (m, o) => new BadConfig(m, o),
  Conflict: (m, o) => new Conflict(m, o),
  Gone: (m, o) => new Gone(m, o),
  PayloadTooLarge: (m, o) => new PayloadTooLarge(m, o),
  MethodNotAllowed: (m, o) => new MethodNotAllowed(m, o),
  RequestTimeout: (m, o) => new RequestTimeout(m, o),
  UriTooLong: (m, o) => new UriTooLong(m, o),
  HeadersTooLarge: (m, o) => new HeadersTooLarge(m, o),
  RateLimited: (m, o) => new RateLimited(m, o.retryAfterS ?? 1, o),
  NotConfigured: (m, o) => new NotConfigured(m, o),
  AdminNotConfigured: (m, o) => new AdminNotConfigured(m, o),
  UpstreamError: (m, o) => new UpstreamError(m, o),
  Unavailable: (m, o) => new Unavailable(m, o),
  ActorUnavailable: (m, o) => new ActorUnavailable(m, o),
  ActorOverloaded: (m, o) => new ActorOverloaded(m, o),
  DeadlineExceeded: (m, o) => new DeadlineExceeded(m, o),
  Internal: (m, o) => new Internal(m, o),
};

/** What an error looks like on the wire between nodes. */
export interface WireError {
  kind: ErrorKind;
  code: string;
  message: string;
  retryAfterS?: number;
  details?: Record<string, unknown>;
}

/**
 * Network errnos, Postgres SQLSTATEs (08xxx connection exception, 57014 statement timeout,
 * 57P01-03 shutdown, 53300 too many connections) and node-postgres's own timeouts: a
 * backing service that did not answer, which a caller may retry (INTERFACE §9.3: 503).
 */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);
const TRANSIENT_MESSAGES = new RegExp(
  [
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Connection terminated',
    'Client has encountered a connection error',
    'Connection timed out',
  ].join('|'),
  'i',
);

function isTransientInfraError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (TRANSIENT_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  return TRANSIENT_MESSAGES.test(err.message);
}

/**
 * A failure of the path, not of what was handed to it: Postgres or NATS did not answer (a
 * dropped connection, a statement timeout, a shutdown), the actor was not there to run it, or
 * its mailbox was full. Retrying the same input whole is right; splitting it up to find a bad
 * part is not. A deadline that passed is not one of them: slow input may be the cause.
 */
export function saysNothingAboutInput(err: unknown): boolean {
  if (err instanceof AppError)
    return err.kind === 'Unavailable' || err.kind === 'ActorUnavailable' || err.kind === 'ActorOverloaded';
  return isTransientInfraError(err);
}

/** Normalise any throw into an AppError (bolt-js: coded errors at the boundary). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isTransientInfraError(err))
    return new Unavailable('a backing service (Postgres or NATS) did not answer in time; retry', {
      cause: err,
      retryAfterS: 1,
    });
  return new Internal('internal error', { cause: err });
}

export function toWire(err: unknown): WireError {
  const e = toAppError(err);
  const wire: WireError = { kind: e.kind, code: e.code, message: e.message };
  if (e.retryAfterS !== undefined) wire.retryAfterS = e.retryAfterS;
  if (e.details !== undefined) wire.details = e.details;
  return wire;
}

export function fromWire(w: WireError): AppError {
  const make = CONSTRUCTORS[w.kind] ?? CONSTRUCTORS.Internal;
  // A code this build does not know (a newer node's) keeps its kind's default.
  const known = (Object.values(ErrorCodes) as string[]).includes(w.code);
  const opts: AppErrorOptions = known ? { code: w.code as ErrorCode } : {};
  if (w.retryAfterS !== undefined) opts.retryAfterS = w.retryAfterS;
  if (w.details !== undefined) opts.details = w.details;
  return make(w.message, opts);
}
