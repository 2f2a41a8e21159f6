// @ts-check
/**
 * The console's one way to the service: the public routes of INTERFACE §3 and §10, called
 * with the tenant's API key as Bearer. The key lives in this tab's session storage only (gone
 * when the tab closes, never in a URL, never sent anywhere but this origin's API).
 *
 * Calls resolve against this module's own URL (`/console/api.js` → `/api/v1/…`), so the
 * console works wherever the service is mounted. Every call is bounded (30 s).
 */

const KEY_ITEM = 'connector-service.api-key';
const TIMEOUT_MS = 30_000;
const API_BASE = new URL('../api/v1/', import.meta.url);

/** @returns {string | null} */
export const storedKey = () => sessionStorage.getItem(KEY_ITEM);
export const storeKey = (/** @type {string} */ key) => sessionStorage.setItem(KEY_ITEM, key);
export const forgetKey = () => sessionStorage.removeItem(KEY_ITEM);

/** An answer that was not a success: the §2 error body's code and message, with the status. */
export class ApiError extends Error {
  /**
   * @param {number} status 0 when the service did not answer
   * @param {string} code the §2 code (`forbidden`, `not_found`, …), or `network` / `timeout`
   * @param {string} message
   * @param {{ requestId?: string | null, retryAfterS?: number | null, route: string }} more
   */
  constructor(status, code, message, more) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.requestId = more.requestId ?? null;
    this.retryAfterS = more.retryAfterS ?? null;
    /** The call, as `GET /api/v1/audit`. */
    this.route = more.route;
  }
}

/**
 * Calls `path` (below `/api/v1/`, e.g. `connectors/installs`) and answers its JSON.
 * @param {string} path
 * @param {{ method?: string, query?: Record<string, string | number | null | undefined>, signal?: AbortSignal,
 *   key?: string | null }} [opts]
 * @returns {Promise<any>}
 */
export async function api(path, opts = {}) {
  const url = new URL(path, API_BASE);
  for (const [name, v] of Object.entries(opts.query ?? {})) {
    if (v !== null && v !== undefined && v !== '') url.searchParams.set(name, String(v));
  }
  const method = opts.method ?? 'GET';
  const route = `${method} ${url.pathname}`;
  const key = opts.key === undefined ? storedKey() : opts.key;
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const signals = [AbortSignal.timeout(TIMEOUT_MS), ...(opts.signal ? [opts.signal] : [])];
  let res;
  try {
    res = await fetch(url, {
      method,
      headers,
      signal: AbortSignal.any(signals),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
    throw new ApiError(
      0,
      timedOut ? 'timeout' : 'network',
      timedOut ? `no answer within ${TIMEOUT_MS / 1000} s` : 'the service could not be reached',
      { route },
    );
  }
  const body = await res.json().catch(() => null);
  if (res.ok) return body;
  const e = body && typeof body === 'object' && body.error && typeof body.error === 'object' ? body.error : {};
  const retryAfter = Number(res.headers.get('retry-after'));
  throw new ApiError(
    res.status,
    typeof e.code === 'string' ? e.code : `http_${res.status}`,
    typeof e.message === 'string' ? e.message : res.statusText,
    {
      requestId: typeof e.request_id === 'string' ? e.request_id : res.headers.get('x-request-id'),
      retryAfterS: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
      route,
    },
  );
}

/** The public OpenAPI document (no key), read once: the console learns the graph's node kinds from it. */
let documentPromise = /** @type {Promise<any> | null} */ (null);
export function openApiDocument() {
  documentPromise ??= fetch(new URL('../openapi.json', import.meta.url), {
    signal: AbortSignal.timeout(TIMEOUT_MS),
    credentials: 'omit',
  })
    .then((r) => (r.ok ? r.json() : null))
    .catch(() => null);
  return documentPromise;
}

/** True when `err` is the abort of a page the user left: nothing to show. */
export const isAbort = (/** @type {unknown} */ err) => err instanceof DOMException && err.name === 'AbortError';
