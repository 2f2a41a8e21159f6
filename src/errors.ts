/**
 * One error vocabulary for the whole service (STYLE.md "Errors").
 *
 * Every failure that can reach a caller is an `AppError` subclass. The subclass is the
 * *kind* (the edge maps kinds to HTTP statuses in exactly one table, `edge/error-map.ts`);
 * `code` is the snake_case string of INTERFACE.md §2 and may be more specific than the
 * kind's default (e.g. a `Conflict` with code `workspace_already_installed`).
 *
 * Errors cross NATS between nodes (actor replies), so each one has a wire form
 * (`toWire` / `fromWire`) that keeps kind, code, message, retryAfterS and details,
 * never the cause (causes can hold upstream bodies or secrets).
 */

export interface AppErrorOptions {
  /** A more specific code than the kind's default. */
  code?: string;
  cause?: unknown;
  /** Whole seconds a client should wait; set on rate limits. */
  retryAfterS?: number;
  /** Extra fields placed inside the error body's `error` object. Never secrets. */
  details?: Record<string, unknown>;
}

export type ErrorKind =
  | 'Unauthorized'
  | 'NotFound'
  | 'BadRequest'
  | 'BadConfig'
  | 'Conflict'
  | 'PayloadTooLarge'
  | 'RateLimited'
  | 'NotConfigured'
  | 'AdminNotConfigured'
  | 'UpstreamError'
  | 'Unavailable'
  | 'ActorUnavailable'
  | 'ActorOverloaded'
  | 'DeadlineExceeded'
  | 'Internal';

export abstract class AppError extends Error {
  abstract readonly kind: ErrorKind;
  readonly code: string;
  readonly retryAfterS: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(defaultCode: string, message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = opts.code ?? defaultCode;
    this.retryAfterS = opts.retryAfterS;
    this.details = opts.details;
  }

  override get name(): string {
    return this.kind;
  }

  /** Terminal errors must not be retried by a caller (restate's split: 4xx terminal). */
  get retryable(): boolean {
    return RETRYABLE.has(this.kind);
  }
}

const RETRYABLE = new Set<ErrorKind>([
  'RateLimited',
  'UpstreamError',
  'Unavailable',
  'ActorUnavailable',
  'ActorOverloaded',
  'DeadlineExceeded',
]);

export class Unauthorized extends AppError {
  readonly kind = 'Unauthorized';
  constructor(message = 'missing or invalid credentials', opts?: AppErrorOptions) {
    super('unauthorized', message, opts);
  }
}
export class NotFound extends AppError {
  readonly kind = 'NotFound';
  constructor(message = 'not found', opts?: AppErrorOptions) {
    super('not_found', message, opts);
  }
}
export class BadRequest extends AppError {
  readonly kind = 'BadRequest';
  constructor(message: string, opts?: AppErrorOptions) {
    super('bad_request', message, opts);
  }
}
/** The spec's `BadConfig`: a payload the service refuses before any upstream call. */
export class BadConfig extends AppError {
  readonly kind = 'BadConfig';
  constructor(message: string, opts?: AppErrorOptions) {
    super('bad_config', message, opts);
  }
}
export class Conflict extends AppError {
  readonly kind = 'Conflict';
  constructor(message: string, opts?: AppErrorOptions) {
    super('conflict', message, opts);
  }
}
export class PayloadTooLarge extends AppError {
  readonly kind = 'PayloadTooLarge';
  constructor(message = 'request body is too large', opts?: AppErrorOptions) {
    super('payload_too_large', message, opts);
  }
}
export class RateLimited extends AppError {
  readonly kind = 'RateLimited';
  constructor(message: string, retryAfterS: number, opts?: AppErrorOptions) {
    super('rate_limited', message, { ...opts, retryAfterS: Math.max(1, Math.ceil(retryAfterS)) });
  }
}
/** 501: a feature whose settings are missing (spec §7: webhook before the connector is configured). */
export class NotConfigured extends AppError {
  readonly kind = 'NotConfigured';
  constructor(message: string, opts?: AppErrorOptions) {
    super('not_configured', message, opts);
  }
}
/** 500: the deployment is broken in a way only its operator can fix (spec §7: admin auth unset). */
export class AdminNotConfigured extends AppError {
  readonly kind = 'AdminNotConfigured';
  constructor(message = 'admin auth is not configured: set SERVICE_ADMIN_API_TOKEN', opts?: AppErrorOptions) {
    super('not_configured', message, opts);
  }
}
export class UpstreamError extends AppError {
  readonly kind = 'UpstreamError';
  constructor(message: string, opts?: AppErrorOptions) {
    super('upstream_error', message, opts);
  }
}
export class Unavailable extends AppError {
  readonly kind = 'Unavailable';
  constructor(message: string, opts?: AppErrorOptions) {
    super('unavailable', message, opts);
  }
}
/** No node answers for the actor's shard (it is moving) and the deadline passed. */
export class ActorUnavailable extends AppError {
  readonly kind = 'ActorUnavailable';
  constructor(message: string, opts?: AppErrorOptions) {
    super('unavailable', message, opts);
  }
}
/**
 * A message the kernel rejected before its handler started (host stopping, actor
 * passivated or crashed while it was queued). Nothing acted on it, so a caller may resend
 * it to whoever owns the key next.
 */
export function notStarted(message: string, cause?: unknown): ActorUnavailable {
  return new ActorUnavailable(message, { details: { not_started: true }, cause });
}

export function isNotStarted(err: unknown): boolean {
  return err instanceof ActorUnavailable && err.details?.not_started === true;
}

/** The actor's mailbox is full: overload is an error, not a hang. */
export class ActorOverloaded extends AppError {
  readonly kind = 'ActorOverloaded';
  constructor(message: string, opts?: AppErrorOptions) {
    super('unavailable', message, { retryAfterS: 1, ...opts });
  }
}
export class DeadlineExceeded extends AppError {
  readonly kind = 'DeadlineExceeded';
  constructor(message: string, opts?: AppErrorOptions) {
    super('unavailable', message, opts);
  }
}
export class Internal extends AppError {
  readonly kind = 'Internal';
  constructor(message = 'internal error', opts?: AppErrorOptions) {
    super('internal', message, opts);
  }
}

const CONSTRUCTORS: Record<ErrorKind, (message: string, opts: AppErrorOptions) => AppError> = {
  Unauthorized: (m, o) => new Unauthorized(m, o),
  NotFound: (m, o) => new NotFound(m, o),
  BadRequest: (m, o) => new BadRequest(m, o),
  BadConfig: (m, o) => new BadConfig(m, o),
  Conflict: (m, o) => new Conflict(m, o),
  PayloadTooLarge: (m, o) => new PayloadTooLarge(m, o),
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
const TRANSIENT_MESSAGES =
  /timeout exceeded when trying to connect|Query read timeout|Connection terminated|Client has encountered a connection error|Connection timed out/i;

export function isTransientInfraError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (TRANSIENT_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  return TRANSIENT_MESSAGES.test(err.message);
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
  const opts: AppErrorOptions = { code: w.code };
  if (w.retryAfterS !== undefined) opts.retryAfterS = w.retryAfterS;
  if (w.details !== undefined) opts.details = w.details;
  return make(w.message, opts);
}
