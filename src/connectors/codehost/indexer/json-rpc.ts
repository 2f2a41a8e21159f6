/**
 * One JSON-RPC 2.0 call over HTTP POST to an indexer daemon (INTERFACE §6).
 *
 * Every way it can go wrong is a value (`RpcFailure`) the caller turns into a plain reply
 * or a `failed` index state: the daemon unreachable, too slow, answering a non-2xx, a
 * redirect (never followed: the URL was checked, where it points to was not), a reply
 * that is not JSON-RPC, or a JSON-RPC `error`. undici's `request` follows no redirects.
 */
import { errors as undiciErrors, request } from 'undici';

export type RpcFailureKind = 'unreachable' | 'timeout' | 'redirect' | 'http_status' | 'bad_reply' | 'rpc_error';

export interface RpcFailure {
  kind: RpcFailureKind;
  /** Safe to show in a reply comment: never a token or the request body. */
  message: string;
  /** HTTP status or JSON-RPC error code. */
  code?: number;
}

export type RpcOutcome = { ok: true; result: unknown } | { ok: false; failure: RpcFailure };

export interface RpcOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Largest reply body read; a daemon cannot make us buffer more. Default 4 MiB. */
  maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
let nextId = 1;

export async function rpcCall(url: string, method: string, params: unknown, opts: RpcOptions): Promise<RpcOutcome> {
  const id = nextId++;
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  let text: string;
  try {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      signal,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    if (res.statusCode >= 300 && res.statusCode < 400) {
      await res.body.dump();
      return fail(
        'redirect',
        `the indexer daemon answered a redirect (${res.statusCode}), which is not followed`,
        res.statusCode,
      );
    }
    text = await readCapped(res.body, opts.maxBytes ?? DEFAULT_MAX_BYTES);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      // A JSON-RPC error may still ride on a non-2xx; prefer its message when it does.
      const rpc = parse(text, id);
      if (!rpc.ok && rpc.failure.kind === 'rpc_error') return rpc;
      return fail('http_status', `the indexer daemon answered HTTP ${res.statusCode}`, res.statusCode);
    }
  } catch (err) {
    if (timeout.aborted || isTimeout(err))
      return fail('timeout', `the indexer daemon did not answer within ${Math.round(opts.timeoutMs / 1000)} s`);
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (err instanceof TooLarge) return fail('bad_reply', 'the indexer daemon reply is too large');
    return fail('unreachable', `the indexer daemon is unreachable (${errorCode(err)})`);
  }
  return parse(text, id);
}

function parse(text: string, id: number): RpcOutcome {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return fail('bad_reply', 'the indexer daemon reply is not JSON');
  }
  if (!body || typeof body !== 'object' || (body as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
    return fail('bad_reply', 'the indexer daemon reply is not JSON-RPC 2.0');
  }
  const b = body as { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } };
  if (b.error && typeof b.error === 'object') {
    const code = typeof b.error.code === 'number' ? b.error.code : undefined;
    const message = typeof b.error.message === 'string' ? b.error.message.slice(0, 500) : 'no message';
    return {
      ok: false,
      failure: {
        kind: 'rpc_error',
        message: `the indexer daemon returned an error: ${message}`,
        ...(code === undefined ? {} : { code }),
      },
    };
  }
  if (b.id !== id) return fail('bad_reply', 'the indexer daemon replied to another request id');
  if (!('result' in b)) return fail('bad_reply', 'the indexer daemon reply has neither result nor error');
  return { ok: true, result: b.result };
}

class TooLarge extends Error {}

async function readCapped(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > max) {
      body.destroy();
      throw new TooLarge();
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function isTimeout(err: unknown): boolean {
  return (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError ||
    (err instanceof Error && err.name === 'TimeoutError')
  );
}

function errorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  const code =
    typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : 'connection failed';
  return code;
}

function fail(kind: RpcFailureKind, message: string, code?: number): RpcOutcome {
  return { ok: false, failure: { kind, message, ...(code === undefined ? {} : { code }) } };
}
