/**
 * INTERFACE §9.3: JSON nested deeper than 128 levels is refused (400 `bad_request`) on
 * every route, checked on the raw text before anything parses it, so no recursive parser,
 * serialiser or projection further on can overflow its stack. One pass, no recursion,
 * no allocation: brackets inside strings (and escaped quotes) do not count.
 */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;

/** Whether the JSON text (UTF-8 bytes or a string) nests objects/arrays deeper than `max`. */
export function jsonTooDeep(text: Uint8Array | string, max = MAX_JSON_DEPTH): boolean {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return false;
}
