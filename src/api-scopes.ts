/**
 * The scopes an API key may carry (INTERFACE §10.4). A key holds a set of them; each
 * keyed route names the one it needs in its definition (`operation({ scope })`,
 * src/edge/operation.ts), the MCP tools name theirs, and the edge checks them in one place
 * (src/edge/tenant-guard.ts). `tenants create`'s key, and `api-keys create` without
 * `--scopes`, hold every scope.
 */
import { Forbidden } from './errors.js';

export const API_SCOPES = [
  /** Graph routes, the change feed, export, MCP reads. */
  'graph:read',
  /** Node actions, erase, MCP `act_on_node`. */
  'graph:write',
  /** Installs, their events and health, the dead-letter list, MCP `list_installs`. */
  'installs:read',
  /** Emit, uninstall, OAuth start, admin install, dead-letter replay. */
  'installs:write',
  /** Every webhook route (§10.2). */
  'webhooks:write',
  /** The audit log (§10.5). */
  'audit:read',
] as const;

export type ApiScope = (typeof API_SCOPES)[number];

/** What a route asks of a key: one scope, or `any` valid key (`GET /api/v1/connectors`). */
export type ScopeNeed = ApiScope | 'any';

const KNOWN: ReadonlySet<string> = new Set(API_SCOPES);

export const isApiScope = (s: string): s is ApiScope => KNOWN.has(s);

/** The scopes of a stored key that this build knows (a scope a later build added is ignored, never granted). */
export function knownScopes(stored: readonly string[]): ApiScope[] {
  return API_SCOPES.filter((s) => stored.includes(s));
}

/** The refusal of a key without `scope`: 403 `forbidden`, `error.scope` naming what it lacks. */
function lacksScope(scope: ApiScope): Forbidden {
  return new Forbidden(`this API key lacks the scope ${scope}`, { details: { scope } });
}

/** Throws `forbidden` unless `held` covers `need` (routes and MCP tools alike). */
export function requireScope(held: readonly ApiScope[], need: ScopeNeed): void {
  if (need !== 'any' && !held.includes(need)) throw lacksScope(need);
}
