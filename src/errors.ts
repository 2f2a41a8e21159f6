/**
 * One error vocabulary for the whole service (STYLE.md "Errors").
 *
 * Every failure that can reach a caller is an `AppError` subclass. The subclass is the
 * *kind* (the edge maps kinds to HTTP statuses in exactly one table, `edge/error-map.ts`);
 * `code` is the snake_case string of INTERFACE.md §2 and may be more specific than the
 * kind's default (e.g. a `Conflict` with code `workspace_already_installed`).
 *
 * Errors cross NATS between nodes (actor replies) in a wire form that never carries the
 * cause; that form, and the normalising of any throw, are in `errors-wire.ts`.
 */

/**
 * Every `code` an error body may carry: the kinds' codes of INTERFACE §2, then the more
 * specific ones of §3 and §8. `AppErrorOptions.code` accepts only these, so a new code is
 * added here, where a reader finds them all.
 */
export const ErrorCodes = {
  unauthorized: 'unauthorized',
  /** INTERFACE §10.4: the API key is valid but lacks the scope the route needs. */
  forbidden: 'forbidden',
  notFound: 'not_found',
  badRequest: 'bad_request',
  badConfig: 'bad_config',
  conflict: 'conflict',
  payloadTooLarge: 'payload_too_large',
  /** A method the path does not take (MCP's `GET /mcp`: this server offers no event stream, §10.3). */
  methodNotAllowed: 'method_not_allowed',
  /** A request whose body or headers did not arrive in time (a slow or stalled sender). */
  requestTimeout: 'request_timeout',
  /** A path parameter longer than the router takes. */
  uriTooLong: 'uri_too_long',
  /** Request headers larger than the server reads. */
  headersTooLarge: 'headers_too_large',
  rateLimited: 'rate_limited',
  notConfigured: 'not_configured',
  upstreamError: 'upstream_error',
  unavailable: 'unavailable',
  internal: 'internal',
  /** Chat OAuth: the person declined on Slack's consent screen (INTERFACE §3). */
  accessDenied: 'access_denied',
  /** The tenant already has an active install of that workspace or App installation. */
  alreadyInstalled: 'already_installed',
  /** Stored credentials fail to decrypt (wrong or rotated master key, tampering). */
  credentialsUnreadable: 'credentials_unreadable',
  /** spec §4: `/oauth/start` of a connector that installs another way. */
  customInstallPath: 'custom_install_path',
  /** An emit, backfill step or effect on an install that is no longer active. */
  installNotActive: 'install_not_active',
  /** INTERFACE §9.3: an Idempotency-Key sent again with another request body. */
  idempotencyKeyReused: 'idempotency_key_reused',
  /** GitHub refused the App for the whole installation (token mint or listing 401/403/404). */
  installationNotAccessible: 'installation_not_accessible',
  /** The OAuth state is missing, unknown, expired or already used. */
  invalidState: 'invalid_state',
  /** GitHub refused one repository's resource with 403: the App lacks a permission there. */
  upstreamForbidden: 'upstream_forbidden',
  userExists: 'user_exists',
  /** spec §5: a chat workspace is installed by at most one tenant. */
  workspaceAlreadyInstalled: 'workspace_already_installed',
  /** INTERFACE §10.1: a feed cursor older than the retention (410). */
  cursorExpired: 'cursor_expired',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export interface AppErrorOptions {
  /** A more specific code than the kind's default. */
  code?: ErrorCode;
  cause?: unknown;
  /** Whole seconds a client should wait; set on rate limits. */
  retryAfterS?: number;
  /** Extra fields placed inside the error body's `error` object. Never secrets. */
  details?: Record<string, unknown>;
}

export type ErrorKind =
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'BadRequest'
  | 'BadConfig'
  | 'Conflict'
  | 'Gone'
  | 'PayloadTooLarge'
  | 'MethodNotAllowed'
  | 'RequestTimeout'
  | 'UriTooLong'
  | 'HeadersTooLarge'
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
  readonly code: ErrorCode;
  readonly retryAfterS: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(defaultCode: ErrorCode, message: string, opts: AppErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = opts.code ?? defaultCode;
    this.retryAfterS = opts.retryAfterS;
    this.details = opts.details;
  }

  override get name(): string {
    return this.kind;
  }

  /** `isRetryable(this)`: the one rule, below. */
  get retryable(): boolean {
    return isRetryable(this);
  }
}

/**
 * The one retry-or-give-up rule (STYLE.md "Errors", restate's split); every retry and
 * terminal decision calls it. Terminal: the request itself was refused (our own 4xx kinds,
 * or an upstream's 4xx answer other than 408 and 429, which a connector's classifier
 * records as `details.upstream_status`; a platform's error code in an answer, such as Slack's
 * `ok: false`, recorded as `details.upstream_error`, whose transient codes the connector
 * records without it) and defects we classified (`Internal`). Retryable:
 * rate limits, upstream 5xx or unreachable, our own unavailability and deadlines, and a
 * throw nobody classified yet (a dropped connection, until a boundary says otherwise).
 * SDK errors go through their connector's classifier first (`toUpstreamError`,
 * `toSlackAppError`): this rule reads coded errors only.
 */
export function isRetryable(err: unknown): boolean {
  if (!(err instanceof AppError)) return true;
  if (err.kind === 'UpstreamError') {
    if (typeof err.details?.upstream_error === 'string') return false;
    const status = err.details?.upstream_status;
    return typeof status !== 'number' || status >= 500 || status === 408 || status === 429;
  }
  return RETRYABLE.has(err.kind);
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
    super(ErrorCodes.unauthorized, message, opts);
  }
}
/** 403: a valid key outside its scopes (INTERFACE §10.4); `details.scope` names the scope it lacks. */
export class Forbidden extends AppError {
  readonly kind = 'Forbidden';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.forbidden, message, opts);
  }
}
export class NotFound extends AppError {
  readonly kind = 'NotFound';
  constructor(message = 'not found', opts?: AppErrorOptions) {
    super(ErrorCodes.notFound, message, opts);
  }
}
export class BadRequest extends AppError {
  readonly kind = 'BadRequest';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.badRequest, message, opts);
  }
}
/** The spec's `BadConfig`: a payload the service refuses before any upstream call. */
export class BadConfig extends AppError {
  readonly kind = 'BadConfig';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.badConfig, message, opts);
  }
}
export class Conflict extends AppError {
  readonly kind = 'Conflict';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.conflict, message, opts);
  }
}
/** 410: what the request points at is no longer kept (INTERFACE §10.1: a feed cursor past the retention). */
export class Gone extends AppError {
  readonly kind = 'Gone';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.cursorExpired, message, opts);
  }
}
/** 405: the path exists, the method does not; `details.allow` lists those it takes (also the `Allow` header). */
export class MethodNotAllowed extends AppError {
  readonly kind = 'MethodNotAllowed';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.methodNotAllowed, message, opts);
  }
}
export class PayloadTooLarge extends AppError {
  readonly kind = 'PayloadTooLarge';
  constructor(message = 'request body is too large', opts?: AppErrorOptions) {
    super(ErrorCodes.payloadTooLarge, message, opts);
  }
}
export class RequestTimeout extends AppError {
  readonly kind = 'RequestTimeout';
  constructor(message = 'the request did not arrive in time', opts?: AppErrorOptions) {
    super(ErrorCodes.requestTimeout, message, opts);
  }
}
export class UriTooLong extends AppError {
  readonly kind = 'UriTooLong';
  constructor(message = 'a path parameter is too long', opts?: AppErrorOptions) {
    super(ErrorCodes.uriTooLong, message, opts);
  }
}
export class HeadersTooLarge extends AppError {
  readonly kind = 'HeadersTooLarge';
  constructor(message = 'the request headers are too large', opts?: AppErrorOptions) {
    super(ErrorCodes.headersTooLarge, message, opts);
  }
}
export class RateLimited extends AppError {
  readonly kind = 'RateLimited';
  constructor(message: string, retryAfterS: number, opts?: AppErrorOptions) {
    super(ErrorCodes.rateLimited, message, { ...opts, retryAfterS: Math.max(1, Math.ceil(retryAfterS)) });
  }
}
/** 501: a feature whose settings are missing (spec §7: webhook before the connector is configured). */
export class NotConfigured extends AppError {
  readonly kind = 'NotConfigured';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.notConfigured, message, opts);
  }
}
/** 500: the deployment is broken in a way only its operator can fix (spec §7: admin auth unset). */
export class AdminNotConfigured extends AppError {
  readonly kind = 'AdminNotConfigured';
  constructor(message = 'admin auth is not configured: set SERVICE_ADMIN_API_TOKEN', opts?: AppErrorOptions) {
    super(ErrorCodes.notConfigured, message, opts);
  }
}
export class UpstreamError extends AppError {
  readonly kind = 'UpstreamError';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.upstreamError, message, opts);
  }
}
export class Unavailable extends AppError {
  readonly kind = 'Unavailable';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.unavailable, message, opts);
  }
}
/** No node answers for the actor's shard (it is moving) and the deadline passed. */
export class ActorUnavailable extends AppError {
  readonly kind = 'ActorUnavailable';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.unavailable, message, opts);
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
    super(ErrorCodes.unavailable, message, { retryAfterS: 1, ...opts });
  }
}
export class DeadlineExceeded extends AppError {
  readonly kind = 'DeadlineExceeded';
  constructor(message: string, opts?: AppErrorOptions) {
    super(ErrorCodes.unavailable, message, opts);
  }
}
export class Internal extends AppError {
  readonly kind = 'Internal';
  constructor(message = 'internal error', opts?: AppErrorOptions) {
    super(ErrorCodes.internal, message, opts);
  }
}
