/**
 * Request schemas that document a route in the OpenAPI document (INTERFACE §9.3) but are
 * never run against a request. The signed webhook routes read their body as raw bytes (the
 * signature covers exactly those bytes) and check headers themselves in their own order
 * (signature 401 before anything else), so a validator there would only cost time on the
 * hot path and see a Buffer. openapi.ts compiles a marked schema to a pass-through.
 */
const DOCUMENTATION_ONLY = new WeakSet<object>();

/** Marks `schema` (a zod schema) as documentation: listed in /openapi.json, never validated. */
export function documentationOnly<T extends object>(schema: T): T {
  DOCUMENTATION_ONLY.add(schema);
  return schema;
}

export function isDocumentationOnly(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && DOCUMENTATION_ONLY.has(schema);
}
