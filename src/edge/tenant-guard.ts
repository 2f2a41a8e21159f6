/**
 * The one place tenant authentication is attached to routes (issue 35): the Bearer key is
 * checked in `onRequest` (before any body is read, so an unauthenticated caller costs no
 * read), after the route's own `onRequest` gates (the admin install's token comes first,
 * INTERFACE §3), and, when the edge has the fenced pool, the handler and everything it
 * awaits run in the caller's tenant scope (src/store/tenant-scope.ts). The routes of the
 * edge's tenant context are all guarded; a connector's route asks for it with
 * `config: { tenant: true }`.
 */
import type { FastifyRequest, onRequestHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify';
import { runInTenantScope } from '../store/tenant-scope.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A tenant route: the Bearer key authenticates it and it runs in that tenant's scope. */
    tenant?: boolean;
  }
}

const asArray = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * `guard(route)` (an `onRoute` hook) attaches authentication, and the tenant scope when
 * `scoped`, to `route`; once, however many contexts' hooks see it.
 */
export function tenantGuard(authenticate: (req: FastifyRequest) => Promise<string>, scoped: boolean) {
  const guarded = new WeakSet<RouteOptions>();
  const authenticated: onRequestHookHandler = async (req) => {
    await authenticate(req);
  };
  // A preHandler: after the body is parsed (its stream callbacks run outside any async context).
  const inScope: preHandlerHookHandler = (req, _reply, done) => runInTenantScope(req.tenantId, done);
  const guard = (route: RouteOptions): void => {
    if (guarded.has(route)) return;
    guarded.add(route);
    route.config = { ...route.config, tenant: true };
    route.onRequest = [...asArray(route.onRequest), authenticated];
    if (scoped) route.preHandler = [inScope, ...asArray(route.preHandler)];
  };
  return {
    /** Every route of the context it is added to. */
    all: guard,
    /** The routes whose config asks for it. */
    marked: (route: RouteOptions) => {
      if (route.config?.tenant === true) guard(route);
    },
  };
}
