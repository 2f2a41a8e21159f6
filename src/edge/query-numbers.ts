/**
 * Query and path values arrive as strings; a route's schema says `limit: z.int().min(1).max(500)`,
 * which is what the OpenAPI document shows (an integer parameter with its bounds). Before
 * such a schema runs, a value written as a JSON number becomes that number (`50`, and as
 * JSON Schema counts integers, `5e1` and `50.0` too), which the schema then bounds;
 * anything else (` 5`, `0x10`, `five`, a repeated parameter) stays as it came and the
 * schema refuses it. So the server accepts what a validator of the document accepts.
 */
import type { z } from 'zod';

const JSON_NUMBER = /^-?(?:0|[1-9]\d{0,15})(?:\.\d{1,15})?(?:[eE][+-]?\d{1,3})?$/;

/** The keys of an object schema whose values are numbers (optional or defaulted ones too). */
export function numericKeys(schema: unknown): ReadonlySet<string> {
  const keys = new Set<string>();
  const shape = (schema as { shape?: Record<string, z.ZodType> } | null)?.shape;
  if (typeof shape !== 'object' || shape === null) return keys;
  for (const [key, field] of Object.entries(shape)) if (isNumber(field)) keys.add(key);
  return keys;
}

function isNumber(schema: z.ZodType): boolean {
  let def = schema._zod.def as { type: string; innerType?: z.ZodType };
  while ((def.type === 'optional' || def.type === 'default') && def.innerType) {
    def = def.innerType._zod.def as typeof def;
  }
  return def.type === 'number';
}

/** `data` with the JSON-number strings of `keys` as numbers (a copy; the request keeps its own). */
export function withNumbers(data: unknown, keys: ReadonlySet<string>): unknown {
  if (typeof data !== 'object' || data === null) return data;
  const out: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  for (const key of keys) {
    const v = out[key];
    if (typeof v === 'string' && JSON_NUMBER.test(v)) out[key] = Number(v);
  }
  return out;
}
