/**
 * Postgres refuses U+0000 in `text` and `jsonb`, and lone UTF-16 surrogates in `jsonb`
 * (JSON.stringify writes them as `\udXXX` escapes, which jsonb rejects). Upstream payloads
 * carry both (a Slack message with a NUL, a truncated emoji), and one bad character must
 * not make an event impossible to store (ARCHITECTURE "Inbound": nothing lost), so
 * strings are cleaned before they are written: NUL removed, a lone surrogate replaced by
 * U+FFFD, exactly as a UTF-8 encoder would.
 */

export function sanitizeText(s: string): string {
  // Fast path: nearly every string is clean, and both checks are native scans (ES2024
  // well-formed strings: a lone surrogate is exactly what isWellFormed finds and
  // toWellFormed replaces with U+FFFD).
  if (s.indexOf('\u0000') === -1 && s.isWellFormed()) return s;
  return s.toWellFormed().replaceAll('\u0000', '');
}

/**
 * JSON.stringify writes U+0000 as `\u0000` and a lone surrogate as `\udXXX` (a valid pair
 * goes out as is), so a value is clean exactly when its JSON text has neither escape. A
 * backslash in the text followed by such letters (`\\u0000`) also matches: that value
 * merely takes the slow path.
 */
const REFUSED_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/**
 * The JSON text of a value as a `jsonb` parameter (issue 12: one stringify instead of a
 * sanitized copy of every payload): the value's own JSON text when it is clean, else the
 * text of its sanitized copy. `undefined` becomes `null`, as before.
 */
export function jsonText(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  if (!REFUSED_ESCAPE.test(text)) return text;
  return JSON.stringify(sanitizeJson(value) ?? null);
}

type Container = Record<string, unknown> | unknown[];

/**
 * A copy of a JSON-like value with every string and every object key sanitized.
 * Iterative (an explicit stack), so a 100 000-level payload cannot overflow the call
 * stack, and linear in the size of the value. Objects with `toJSON` (Date, Buffer) are
 * converted first, as JSON.stringify would. Two keys that become equal once cleaned
 * collapse to one (the later wins), as duplicate keys do in jsonb.
 */
export function sanitizeJson<T = unknown>(value: T): T {
  const root = { v: value as unknown };
  const stack: Array<[source: Container, target: Container]> = [];
  root.v = copyNode(root.v, stack);
  while (stack.length > 0) {
    const [source, target] = stack.pop()!;
    if (Array.isArray(source)) {
      const out = target as unknown[];
      for (let i = 0; i < source.length; i++) out[i] = copyNode(source[i], stack);
    } else {
      const out = target as Record<string, unknown>;
      for (const key of Object.keys(source)) {
        setOwn(out, sanitizeText(key), copyNode(source[key], stack));
      }
    }
  }
  return root.v as T;
}

/** A leaf copied, or an empty container queued to be filled from its source. */
function copyNode(v: unknown, stack: Array<[Container, Container]>): unknown {
  if (typeof v === 'string') return sanitizeText(v);
  if (v === null || typeof v !== 'object') return v;
  const withToJson = v as { toJSON?: unknown };
  if (typeof withToJson.toJSON === 'function') {
    const converted: unknown = (withToJson.toJSON as () => unknown).call(v);
    if (converted !== v) return copyNode(converted, stack);
  }
  const target: Container = Array.isArray(v) ? new Array<unknown>(v.length) : {};
  stack.push([v as Container, target]);
  return target;
}

/** `__proto__` from JSON.parse is an own key; plain assignment would set the prototype. */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}
