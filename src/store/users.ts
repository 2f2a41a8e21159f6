/**
 * User profiles of a tenant (INTERFACE §1 "users create"; the admin install body names
 * one by `user_id`, and the edge checks it belongs to the caller's tenant).
 */
import { BadRequest, Conflict, ErrorCodes, NotFound } from '../errors.js';
import { isUuid, pgConstraint, pgErrorCode, type Queryable } from './db.js';
import { sanitizeText } from './sanitize.js';

// Loose on purpose: one @, something either side, no spaces. Real validation is delivery.
const EMAIL = /^[^\s@]+@[^\s@]+$/;

export async function createUser(q: Queryable, tenantId: string, email: string): Promise<{ user_id: string }> {
  const clean = sanitizeText(email).trim();
  if (clean.length > 320 || !EMAIL.test(clean)) throw new BadRequest('email must look like name@domain');
  if (!isUuid(tenantId)) throw new NotFound('tenant not found');
  try {
    // Insert-from-select: no row when the tenant does not exist, without a race.
    const { rows } = await q.query<{ user_id: string }>(
      `INSERT INTO users (tenant_id, email)
       SELECT tenant_id, $2 FROM tenants WHERE tenant_id = $1
       RETURNING user_id`,
      [tenantId, clean],
    );
    if (!rows[0]) throw new NotFound('tenant not found');
    return { user_id: rows[0].user_id };
  } catch (err) {
    if (pgErrorCode(err) === '23505' && pgConstraint(err) === 'users_tenant_email') {
      throw new Conflict('a user with this email already exists in this tenant', { code: ErrorCodes.userExists });
    }
    throw err;
  }
}

export async function userBelongsToTenant(q: Queryable, tenantId: string, userId: string): Promise<boolean> {
  if (!isUuid(tenantId) || !isUuid(userId)) return false;
  const { rows } = await q.query('SELECT 1 FROM users WHERE user_id = $1 AND tenant_id = $2', [userId, tenantId]);
  return rows.length > 0;
}
