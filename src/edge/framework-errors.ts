/**
 * Every answer has the error body of INTERFACE §2 and carries `X-Request-Id` (§9.3), the
 * refusals Fastify and Node make on their own included (issue 32): a URL that does not
 * decode (`%ff%fe`), a path parameter past the router's length (`frameworkErrors`), and a
 * request Node's HTTP parser refuses before Fastify sees it: a bare CR, LF or NUL in a
 * header, headers too large, a request that did not arrive in time (`clientError`). Every
 * listener of a node (the edge, the actors-only ops routes, the metrics port) is built with
 * `FRAMEWORK_ERROR_OPTIONS` and `answerInContractShape`.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  AppError,
  BadRequest,
  HeadersTooLarge,
  Internal,
  NotFound,
  PayloadTooLarge,
  RequestTimeout,
  UriTooLong,
} from '../errors.js';
import { errorBody, sendError, STATUS_OF } from './error-map.js';
import { isLingering, lingerAfterEarlyAnswers, lingeringClose } from './lingering-close.js';
import { requestIdOf } from './request-id.js';

/** Fastify's refusals before routing, in the §2 shape. */
function frameworkError(err: FastifyError): AppError {
  if (err.code === 'FST_ERR_BAD_URL') return new BadRequest('the URL is not valid: a path segment does not decode');
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return new UriTooLong('a path parameter is longer than 100 characters');
  return new Internal('internal error', { cause: err });
}

/** Node's parser refusals (`clientError`), in the §2 shape. */
function clientError(err: Error & { code?: string }): AppError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new RequestTimeout('the request did not arrive in time');
  if (err.code === 'HPE_HEADER_OVERFLOW') return new HeadersTooLarge();
  if (err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return new PayloadTooLarge('chunk extensions are too large');
  return new BadRequest('malformed HTTP request: the server could not parse it');
}

/** The response in flight on `socket`, if one started (Node keeps it there; its own handler reads it too). */
function responseInFlight(socket: Socket): boolean {
  const res = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  return res?.headersSent === true;
}

export const FRAMEWORK_ERROR_OPTIONS = {
  // INTERFACE §9.3: the caller's X-Request-Id when well-formed, else a generated one.
  requestIdHeader: false as const,
  genReqId: (raw: { headers: Record<string, string | string[] | undefined> }) =>
    requestIdOf(raw.headers['x-request-id']),
  frameworkErrors: (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', req.id);
    sendError(reply, frameworkError(err), req.log);
  },
  clientErrorHandler: (err: Error & { code?: string }, socket: Socket) => {
    // Answered already: the parser refuses what still arrives, and lingering discards it.
    if (isLingering(socket)) return;
    // A reset peer, a socket already answered and half-closed, or a response under way
    // (writing now would corrupt it): nothing more to say on this connection.
    if (err.code === 'ECONNRESET' || !socket.writable || responseInFlight(socket)) {
      socket.destroy();
      return;
    }
    const id = requestIdOf(undefined);
    const e = clientError(err);
    const status = STATUS_OF[e.kind];
    const body = JSON.stringify(errorBody(e, id));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
    );
    lingeringClose(socket);
  },
};

/**
 * The routes' side: `X-Request-Id` on every response, Fastify's errors (body too large,
 * content type, validation, JSON) mapped to §2 codes, 404 for a route that does not exist,
 * and an answer sent before its request's body was read closes by lingering (lingering-close.ts).
 */
export function answerInContractShape(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    done();
  });
  lingerAfterEarlyAnswers(app);
  app.setErrorHandler((err, req, reply) => {
    const e = err as { code?: string; statusCode?: number };
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(reply, new PayloadTooLarge());
    if (
      e.code?.startsWith('FST_ERR_CTP_') ||
      e.code === 'FST_ERR_VALIDATION' ||
      (e.statusCode === 400 && !(err instanceof Error && 'kind' in err))
    ) {
      return sendError(
        reply,
        new BadRequest(
          e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
            ? 'Content-Type must be application/json'
            : 'malformed request body',
        ),
      );
    }
    return sendError(reply, err, req.log);
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, new NotFound(`no route for ${req.method} ${req.url.split('?')[0]}`)),
  );
}
