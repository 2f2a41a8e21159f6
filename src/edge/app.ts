/**
 * The Fastify edge, built apart from `listen()` so tests drive it through `inject()`.
 *
 * Plugin boundaries (STYLE.md, from fastify): tenant routes live in one context whose
 * preHandler authenticates the Bearer key and whose body limit is 1 MiB (INTERFACE §2);
 * webhook routes (`routes/chatapp/`, `routes/codehost/`) register their own context with a
 * 25 MiB limit and the raw body kept for signatures; ops routes (`/healthz`, `/readyz`, `/metrics`) need
 * no auth. Every error leaves through `sendError`, so every route has the §2 body.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { BadRequest, NotFound, PayloadTooLarge } from '../errors.js';
import { createTenantAuth } from './auth.js';
import { TENANT_BODY_LIMIT, type EdgeContext, type EdgeDeps } from './context.js';
import { sendError } from './error-map.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from './json-depth.js';
import { ByteBudget, UNVERIFIED_BYTES_BUDGET } from './raw-body.js';
import { connectorRoutes } from './routes/connectors.js';
import { eventRoutes } from './routes/events.js';
import { graphRoutes } from './routes/graph.js';
import { installRoutes } from './routes/installs.js';
import { opsRoutes } from './routes/ops.js';

export async function buildEdge(deps: EdgeDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log.child({ component: 'edge' }) as FastifyBaseLogger,
    // Request logs would double every line on a busy webhook edge; metrics count requests.
    logController: new LogController({ disableRequestLogging: true }),
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

  const ctx: EdgeContext = {
    ...deps,
    authenticate: createTenantAuth(deps.resolveTenant).authenticate,
    unverifiedBytes: new ByteBudget(UNVERIFIED_BYTES_BUDGET),
  };

  // INTERFACE §9.3: depth checked on the raw text before parsing (never a stack overflow).
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (jsonTooDeep(body as string)) {
      return done(new BadRequest(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    }
    parseJson(req, body as string, done);
  });

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    deps.metrics.requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    deps.metrics.latency.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });

  app.setErrorHandler((err, req, reply) => {
    const e = err as { code?: string; statusCode?: number; message?: string };
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(reply, new PayloadTooLarge());
    if (
      e.code?.startsWith('FST_ERR_CTP_') ||
      e.code === 'FST_ERR_VALIDATION' ||
      (e.statusCode === 400 && !(err instanceof Error && 'kind' in err))
    ) {
      return sendError(
        reply,
        new BadRequest(
          e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
            ? 'Content-Type must be application/json'
            : 'malformed request body',
        ),
      );
    }
    return sendError(reply, err, req.log);
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, new NotFound(`no route for ${req.method} ${req.url.split('?')[0]}`)),
  );

  await app.register(opsRoutes, ctx);
  await app.register(
    async (tenant) => {
      // onRequest: refuse unauthenticated callers before their body is read.
      tenant.addHook('onRequest', async (req) => {
        await ctx.authenticate(req);
      });
      await tenant.register(connectorRoutes, ctx);
      await tenant.register(installRoutes, ctx);
      await tenant.register(eventRoutes, ctx);
      await tenant.register(graphRoutes, ctx);
    },
    { prefix: '/api/v1' },
  );
  for (const p of deps.plugins ?? []) await app.register(p.plugin, { ...ctx, prefix: p.prefix });
  return app;
}
