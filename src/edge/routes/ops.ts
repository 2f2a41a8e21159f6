/** Unauthenticated operations routes (INTERFACE §3): liveness, readiness, Prometheus metrics. */
import type { FastifyPluginAsync } from 'fastify';
import type { EdgeContext } from '../context.js';

export const opsRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/healthz', async () => ({ ok: true }));

  // Readiness: NATS and Postgres reachable, shards owned (a node still acquiring its
  // share answers 503 so a load balancer sends it nothing yet).
  app.get('/readyz', async (_req, reply) => {
    const report = await ctx.ready().catch(() => ({ ready: false, checks: {} }));
    return reply.code(report.ready ? 200 : 503).send(report);
  });

  app.get('/metrics', async (_req, reply) => {
    const body = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(body);
  });
};
