/**
 * The one place tenant authentication is attached to routes (issue 35): the Bearer key is
 * checked in `onRequest` (before any body is read, so an unauthenticated caller costs no
 * read), after the route's own `onRequest` gates (the admin install's token comes first,
 * INTERFACE §3), and, when the edge has the fenced pool, the handler and everything it
 * awaits run in the caller's tenant scope (src/store/tenant-scope.ts). The routes of the
 * edge's tenant context are all guarded; a connector's route is guarded when its operation
 * says it takes a tenant's key (operation.ts `auth`: the document and the check cannot
 * disagree) or its config asks with `config: { tenant: true }`. A route whose document says
 * public but which is guarded, or asks to be, stops the node at start.
 *
 * Scopes (INTERFACE §10.4) are checked here too, and only here: a guarded route needs the
 * scope its operation names (operation.ts `scope`, the one the document shows), and a key
 * without it gets 403 `forbidden` with `error.scope` naming the missing scope, before the body
 * is read. A guarded route whose definition names no scope stops the node at start, so a new
 * route cannot forget one.
 */
import type { FastifyRequest, onRequestHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify';
import { requireScope, type ScopeNeed } from '../api-scopes.js';
import { runInTenantScope } from '../store/tenant-scope.js';
import type { KeyGrant } from './auth.js';
import { scopeOfSchema } from './operation.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A tenant route: the Bearer key authenticates it and it runs in that tenant's scope. */
    tenant?: boolean;
  }
}

const asArray = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Whether the route's documented security takes a tenant's key; null when it documents none. */
function documentedKeyed(route: RouteOptions): boolean | null {
  const security = (route.schema as { security?: Array<Record<string, unknown>> } | undefined)?.security;
  if (security === undefined) return null;
  return security.some((s) => 'bearerAuth' in s);
}

function refusePublic(route: RouteOptions): void {
  if (documentedKeyed(route) === false)
    throw new Error(`${route.method} ${route.url}: a tenant route documented as public (operation auth)`);
}

/**
 * `guard(route)` (an `onRoute` hook) attaches authentication, and the tenant scope when
 * `scoped`, to `route`; once, however many contexts' hooks see it.
 */
export function tenantGuard(authenticate: (req: FastifyRequest) => Promise<KeyGrant>, scoped: boolean) {
  const guarded = new WeakSet<RouteOptions>();
  const authenticated = (need: ScopeNeed): onRequestHookHandler =>
    async function authenticated(req) {
      const grant = await authenticate(req);
      requireScope(grant.scopes, need);
    };
  // A preHandler: after the body is parsed (its stream callbacks run outside any async context).
  const inScope: preHandlerHookHandler = (req, _reply, done) => runInTenantScope(req.tenantId, done);
  const guard = (route: RouteOptions): void => {
    if (guarded.has(route)) return;
    guarded.add(route);
    const need = scopeOfSchema(route.schema);
    if (need === undefined) {
      throw new Error(`${String(route.method)} ${route.url}: a tenant route names its scope (operation scope, §10.4)`);
    }
    route.config = { ...route.config, tenant: true };
    route.onRequest = [...asArray(route.onRequest), authenticated(need)];
    if (scoped) route.preHandler = [inScope, ...asArray(route.preHandler)];
  };
  return {
    /** Every route of the context it is added to. */
    all: (route: RouteOptions) => {
      refusePublic(route);
      guard(route);
    },
    /** The routes whose operation takes a tenant's key, or whose config asks for it. */
    marked: (route: RouteOptions) => {
      if (route.config?.tenant === true) refusePublic(route);
      if (route.config?.tenant === true || documentedKeyed(route) === true) guard(route);
    },
  };
}
