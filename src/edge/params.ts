/**
 * Shared parsing of path and query values. A malformed install id is answered exactly
 * like an unknown or foreign one (INTERFACE §2: 404), so ids leak nothing.
 */
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { AppError, BadRequest, NotFound, type AppErrorOptions } from '../errors.js';
import type { Queryable } from '../store/db.js';
import { getInstall, type Install } from '../store/installs.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function ownInstall(db: Queryable, tenantId: string, installId: string): Promise<Install> {
  const install = UUID.test(installId) ? await getInstall(db, tenantId, installId.toLowerCase()) : null;
  if (!install) throw new NotFound('install not found');
  return install;
}

/** zod parse that throws the §2 `bad_request` naming the first bad field. */
export function parseOrBadRequest<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.path.length ? issue.path.join('.') : what;
  throw new BadRequest(`${what}: ${field}: ${issue.message}`);
}

type Part = 'body' | 'querystring' | 'params';

/**
 * The part of a request its route schema validated (routes registered with
 * `attachValidation: true`), or the §2 error naming the first bad field: `bad_request`
 * unless the route's contract says otherwise (emit: `bad_config`). Called where the route
 * wants the check, so earlier answers (404 for a foreign install) keep their order.
 */
export function validInput<T>(
  req: FastifyRequest,
  part: Part,
  Err: new (message: string, opts?: AppErrorOptions) => AppError = BadRequest,
): T {
  const e = req.validationError as
    | (Error & { validationContext?: string; validation?: Array<{ instancePath?: string; message?: string }> })
    | undefined;
  if (e && e.validationContext === part) {
    const what = part === 'querystring' ? 'query' : part;
    const first = e.validation?.[0];
    const field = first?.instancePath ? first.instancePath.replace(/^\//, '').replaceAll('/', '.') : what;
    throw new Err(`${what}: ${field}: ${first?.message ?? e.message}`);
  }
  return (part === 'body' ? req.body : req.query) as T;
}
