/**
 * The Fastify edge, built apart from `listen()` so tests drive it through `inject()`.
 *
 * Plugin boundaries (STYLE.md, from fastify): tenant routes live in one context whose
 * routes authenticate the Bearer key (tenant-guard.ts) and whose body limit is 1 MiB (INTERFACE §2);
 * webhook routes (`routes/chatapp/`, `routes/codehost/`) register their own context with a
 * 25 MiB limit and the raw body kept for signatures; ops routes (`/healthz`, `/readyz`, `/metrics`) need
 * no auth, nor do the console's static files (`/console`, routes/console.ts). Every error leaves
 * through `sendError`, so every route has the §2 body.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { BadRequest, RateLimited } from '../errors.js';
import { createTenantAuth, type KeyGrant, type TenantAuth } from './auth.js';
import { TENANT_BODY_LIMIT, type EdgeContext, type EdgeDeps } from './context.js';
import { answerInContractShape, FRAMEWORK_ERROR_OPTIONS } from './framework-errors.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from './json-depth.js';
import { countRequest } from './metrics.js';
import { ByteBudget, UNVERIFIED_BYTES_BUDGET } from './raw-body.js';
import { registerOpenApi } from './openapi.js';
import { logContext } from '../log.js';
import { runWithWaitBudget, WaitBudget } from '../wait-budget.js';
import type { FeedWaker } from '../runtime/feed-notices.js';
import { edgeTracingPlugin } from '../telemetry/tracing.js';
import { packageVersion } from '../version.js';
import { connectorRoutes } from './routes/connectors.js';
import { consoleRoutes } from './routes/console.js';
import { eventRoutes } from './routes/events.js';
import { changeRoutes } from './routes/changes.js';
import { graphRoutes } from './routes/graph.js';
import { installRoutes } from './routes/installs.js';
import { mcpRoutes } from './routes/mcp.js';
import { opsRoutes } from './routes/ops.js';
import { tenantGuard } from './tenant-guard.js';
import { recordAudited } from './audit.js';
import { auditRoutes } from './routes/audit.js';
import { exportRoutes } from './routes/export.js';
import { createTenantRate } from './tenant-rate.js';

/** Without NATS notices, a held feed request re-reads every second (INTERFACE §10.1 allows a second). */
const pollingWaker: FeedWaker = {
  wait: (_tenant, _after, ms, signal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(ms, 1000));
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    }),
};

/** Each request's wait budget, entered again once its body is read. */
const budgets = new WeakMap<FastifyRequest, WaitBudget>();

export async function buildEdge(deps: EdgeDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log.child({ component: 'edge' }) as FastifyBaseLogger,
    // Fastify's own request logs would double every line on a busy webhook edge; the access
    // log below is one line per request at `debug`, and metrics count requests.
    logController: new LogController({ disableRequestLogging: true }),
    // INTERFACE §9.3: X-Request-Id and the §2 body on Fastify's and Node's own refusals too.
    ...FRAMEWORK_ERROR_OPTIONS,
    // Lines get `request_id` from logContext (src/log.ts), entered below for every request,
    // so loggers that are not `req.log` (actor ports, stores) carry it too; no second copy here.
    childLoggerFactory: (logger, _bindings, opts) => logger.child({}, opts),
    bodyLimit: TENANT_BODY_LIMIT,
    // Node's defaults (60 s headers, 300 s request) are far too lax for webhook senders
    // that give up after 3 s (Slack) or 10 s (GitHub); slow clients must not pin sockets.
    connectionTimeout: 30_000,
    requestTimeout: 30_000,
    keepAliveTimeout: 5_000,
    return503OnClosing: true,
    trustProxy: true,
  });
  app.server.headersTimeout = 10_000;
  // INTERFACE §10.7: each request's span (its trace continued from a `traceparent` header), before any route.
  const tracing = edgeTracingPlugin();
  if (tracing) await app.register(tracing);

  const auth = deps.auth ?? createTenantAuth(deps.resolveTenant);
  const rate = createTenantRate(deps.config.security.tenantRatePerS);
  // Every tenant route authenticates through here, so the per-tenant limit (INTERFACE §9.2)
  // covers them all, connector plugins included.
  const authenticate = async (req: Parameters<TenantAuth['authenticate']>[0]): Promise<KeyGrant> => {
    const grant = await auth.authenticate(req);
    const taken = rate.take(grant.tenantId);
    if (!taken.ok) {
      deps.metrics.tenantRateLimited.inc();
      throw new RateLimited('too many requests for this tenant', taken.retryAfterMs / 1000);
    }
    return grant;
  };
  const unverifiedBytes = new ByteBudget(UNVERIFIED_BYTES_BUDGET, (n) => deps.metrics.unverifiedBodyBytes.set(n));
  const ctx: EdgeContext = { ...deps, unverifiedBytes, feed: deps.feed ?? pollingWaker };

  // INTERFACE §9.3: depth checked on the raw text before parsing (never a stack overflow).
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (jsonTooDeep(body as string)) {
      return done(new BadRequest(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    }
    parseJson(req, body as string, done);
  });

  answerInContractShape(app);
  app.addHook('onRequest', (req, _reply, done) => {
    // INTERFACE §9.3: one 2 s budget for every Postgres and NATS wait of the request (wait-budget.ts).
    const budget = new WaitBudget();
    budgets.set(req, budget);
    logContext.run({ request_id: req.id }, () => runWithWaitBudget(budget, done));
  });
  // The body's stream callbacks run outside any async context: the handler re-enters the budget.
  app.addHook('preHandler', (req, _reply, done) => {
    const budget = budgets.get(req);
    if (budget) runWithWaitBudget(budget, done);
    else done();
  });
  const endBudget = async (req: FastifyRequest) => budgets.get(req)?.close();
  app.addHook('onRequestAbort', endBudget);

  app.addHook('onResponse', async (req, reply) => {
    budgets.get(req)?.close();
    const route = req.routeOptions.url ?? 'unmatched';
    logContext.run({ request_id: req.id }, () =>
      req.log.debug(
        { method: req.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request served',
      ),
    );
    countRequest(deps.metrics, req.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });

  // INTERFACE §10.5: an entry per audited call, on the service's login (audit.ts).
  recordAudited(app, { db: deps.db, log: deps.log });

  // Tenant authentication, attached in one place (tenant-guard.ts): every route below /api/v1
  // of the tenant context, and each connector route whose config says `tenant: true`.
  const guard = tenantGuard(authenticate, deps.tenantDb !== undefined);
  app.addHook('onRoute', guard.marked);
  await registerOpenApi(app, packageVersion());
  await app.register(opsRoutes, ctx);
  // INTERFACE §10.7: the tenant console, a page of static files calling the routes below.
  await app.register(consoleRoutes);
  const tenantCtx: EdgeContext = { ...ctx, db: deps.tenantDb ?? deps.db };
  await app.register(
    async (tenant) => {
      tenant.addHook('onRoute', guard.all);
      await tenant.register(connectorRoutes, tenantCtx);
      await tenant.register(installRoutes, tenantCtx);
      await tenant.register(eventRoutes, tenantCtx);
      await tenant.register(graphRoutes, tenantCtx);
      await tenant.register(changeRoutes, tenantCtx);
      await tenant.register(auditRoutes, tenantCtx);
      await tenant.register(exportRoutes, tenantCtx);
    },
    { prefix: '/api/v1' },
  );
  // INTERFACE §10.3: the MCP server for agents, outside /api/v1; its POST is keyed, so guard.marked guards it.
  // Handed both pools: its tools run on the tenant's, its audit entries on the service's.
  await app.register(mcpRoutes, ctx);
  for (const p of deps.plugins ?? []) await app.register(p.plugin, { ...ctx, prefix: p.prefix });
  return app;
}
