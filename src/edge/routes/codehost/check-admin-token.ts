/**
 * spec §5: `X-Service-Admin-Token` is compared with `SERVICE_ADMIN_API_TOKEN` in constant
 * time. Both sides are hashed first, so the comparison never depends on (or reveals) the
 * configured token's length.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function adminTokenMatches(given: unknown, expected: string): boolean {
  const value = Array.isArray(given) ? given[0] : given;
  if (typeof value !== 'string' || value.length === 0 || expected.length === 0) return false;
  return timingSafeEqual(digest(value), digest(expected));
}
