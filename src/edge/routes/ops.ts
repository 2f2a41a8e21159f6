/** Unauthenticated operations routes (INTERFACE §3): liveness, readiness, Prometheus metrics. */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { EdgeContext } from '../context.js';

const tags = ['operations'];
const Readiness = z.object({ ready: z.boolean(), checks: z.record(z.string(), z.boolean()) });
const HEALTHZ_SCHEMA = { summary: 'Liveness', tags, response: { 200: z.object({ ok: z.literal(true) }) } };
const READYZ_SCHEMA = {
  summary: "Readiness: NATS and Postgres reachable, shards owned (this node's roles)",
  tags,
  response: { 200: Readiness, 503: Readiness },
};
const METRICS_SCHEMA = {
  summary: 'Prometheus metrics (text exposition format)',
  tags,
  response: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } } },
};

export const opsRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/healthz', { schema: HEALTHZ_SCHEMA }, async () => ({ ok: true }));

  // Readiness: NATS and Postgres reachable, shards owned (a node still acquiring its
  // share answers 503 so a load balancer sends it nothing yet).
  app.get('/readyz', { schema: READYZ_SCHEMA }, async (_req, reply) => {
    const report = await ctx.ready().catch(() => ({ ready: false, checks: {} }));
    return reply.code(report.ready ? 200 : 503).send(report);
  });

  app.get('/metrics', { schema: METRICS_SCHEMA }, async (_req, reply) => {
    const body = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(body);
  });
};
