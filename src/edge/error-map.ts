/**
 * The one table from error kind to HTTP status (STYLE.md: "HTTP mapping in one table in
 * the edge; nowhere else knows status codes"), and the error body of INTERFACE.md §2:
 * `{"error": {"code", "message", ...details}}`.
 */
import type { FastifyReply } from 'fastify';
import { AppError, type ErrorKind } from '../errors.js';
import { toAppError } from '../errors-wire.js';

export const STATUS_OF: Record<ErrorKind, number> = {
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  BadRequest: 400,
  BadConfig: 400,
  Conflict: 409,
  Gone: 410,
  PayloadTooLarge: 413,
  MethodNotAllowed: 405,
  RequestTimeout: 408,
  UriTooLong: 414,
  HeadersTooLarge: 431,
  RateLimited: 429,
  NotConfigured: 501,
  AdminNotConfigured: 500,
  UpstreamError: 502,
  Unavailable: 503,
  ActorUnavailable: 503,
  ActorOverloaded: 503,
  DeadlineExceeded: 503,
  Internal: 500,
};

export interface ErrorBody {
  error: { code: string; message: string; [k: string]: unknown };
}

/** `requestId`: INTERFACE §9.3, every error body carries it as `error.request_id`. */
export function errorBody(err: AppError, requestId?: string): ErrorBody {
  const body: ErrorBody = { error: { ...(err.details ?? {}), code: err.code, message: err.message } };
  if (requestId !== undefined) body.error.request_id = requestId;
  return body;
}

/** Only what is needed to report a 5xx: fastify's request logger and pino both fit. */
export interface ErrorLog {
  error(obj: object, msg: string): void;
}

export function sendError(reply: FastifyReply, thrown: unknown, log?: ErrorLog): FastifyReply {
  const err = reportError(reply, thrown, log);
  if (err.retryAfterS !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(err.retryAfterS))));
  return reply.code(STATUS_OF[err.kind]).type('application/json').send(errorBody(err, reply.request.id));
}

/**
 * Any throw as the AppError a caller is told of, logging a 5xx's cause (never told): for a
 * route that answers its errors other than as a §2 JSON body (§10.7's browser pages).
 */
export function reportError(reply: FastifyReply, thrown: unknown, log?: ErrorLog): AppError {
  const err = toAppError(thrown);
  const status = STATUS_OF[err.kind];
  if (status >= 500 && log) {
    // `request_id` explicitly too: an error handler may run outside the request's logContext.
    // Internal errors keep their cause in the log only; the body never carries it.
    log.error(
      {
        request_id: reply.request.id,
        err:
          thrown instanceof AppError
            ? { kind: err.kind, code: err.code, message: err.message, cause: err.cause }
            : thrown,
      },
      'request failed',
    );
  }
  return err;
}
