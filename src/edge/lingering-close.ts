/**
 * Early answers reach the client (issue 33 item 3). When the service answers before it has
 * read the request's body (413 on a declared length, 503 past the unverified-bytes budget,
 * 401 before a body is read, 408 on a trickle), closing the socket while the client still
 * uploads makes the kernel reset the connection, and a reset discards the answer the
 * client has not read yet: it sees EPIPE or ECONNRESET and no status. So, like nginx's
 * lingering close, such an answer says `Connection: close`, the socket is half-closed once
 * it is written (FIN: the answer is complete), and what the client still sends is read and
 * discarded, never held, while it keeps arriving (nothing for `LINGER_IDLE_MS` ends it), for
 * at most `LINGER_MAX_MS` and `LINGER_MAX_BYTES`; then it closes. A fixed 5 s bound cut
 * large uploads on a busy node while they were still arriving (16 × 24 MiB at once), and
 * their clients saw EPIPE after all. INTERFACE §9.3's memory bound holds: discarded bytes are not kept.
 */
import { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** A lingering socket on which nothing arrived this long is closed (nginx's `lingering_timeout`). */
const LINGER_IDLE_MS = 5_000;
/** The longest a socket lingers after an early answer, whatever arrives (nginx's `lingering_time`). */
const LINGER_MAX_MS = 30_000;
/** How much a lingering socket reads and discards: more than the largest body any route takes (25 MiB). */
const LINGER_MAX_BYTES = 32 * 1024 * 1024;
const LINGER_CHECK_MS = 100;

const lingering = new WeakSet<Socket>();

/** Whether `socket` is lingering after an early answer (what arrives on it is discarded). */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * Half-closes `socket` once what was written to it is sent, then reads and discards until
 * the client closes, nothing arrived for `LINGER_IDLE_MS`, `LINGER_MAX_MS` passed or
 * `LINGER_MAX_BYTES` arrived, then closes it.
 */
export function lingeringClose(socket: Socket): void {
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  // After an answer with `Connection: close`, Node ends the socket and destroys it as soon as
  // its FIN is written (`destroySoon`), with the upload still arriving: that destroy is what resets.
  socket.removeListener('finish', socket.destroy);
  if (!socket.writableEnded) socket.end();
  // Paused (a body nobody reads fills its buffer, and Node stops reading): keep reading.
  socket.resume();
  const start = socket.bytesRead;
  const began = performance.now();
  let seen = start;
  let heardAt = began;
  const over = () => {
    const now = performance.now();
    if (socket.bytesRead !== seen) [seen, heardAt] = [socket.bytesRead, now];
    return seen - start > LINGER_MAX_BYTES || now - began >= LINGER_MAX_MS || now - heardAt >= LINGER_IDLE_MS;
  };
  const timer = setInterval(() => {
    // Timers run before the loop reads its sockets: after a stalled loop, what arrived meanwhile
    // is read first (setImmediate runs after that), so a busy node never takes it for silence.
    if (over()) setImmediate(() => over() && socket.destroy());
  }, LINGER_CHECK_MS);
  timer.unref();
  socket.once('close', () => clearInterval(timer));
}

/**
 * Every answer sent before its request's body was read through closes the connection by
 * lingering: `Connection: close`, then `lingeringClose` once the answer is written. The
 * request's body stream is already draining (Node dumps a body nobody read; the raw-body
 * parser resumes one it refused), so what arrives is discarded.
 */
export function lingerAfterEarlyAnswers(app: FastifyInstance): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    const socket = req.raw.socket;
    // `complete` is false while the body is still arriving (a request injected in tests has no socket).
    if (req.raw.complete === false && socket instanceof Socket) {
      reply.header('connection', 'close');
      reply.raw.once('finish', () => lingeringClose(socket));
    }
    done(null, payload);
  });
}
