/** Unauthenticated operations routes (INTERFACE §3): liveness, readiness, Prometheus metrics. */
import Fastify, { type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { EdgeContext, ReadinessCheck } from '../context.js';
import { operation } from '../operation.js';
import { answerInContractShape, FRAMEWORK_ERROR_OPTIONS } from '../framework-errors.js';

const tag = 'operations';
const Readiness = z
  .object({
    ready: z.boolean(),
    checks: z.record(z.string(), z.boolean()).describe("Each check of this node's roles, e.g. `nats`, `postgres`"),
  })
  .meta({ id: 'Readiness' });
const HEALTHZ_SCHEMA = operation({
  operationId: 'getLiveness',
  tag,
  summary: 'Liveness',
  auth: 'public',
  responses: { 200: { description: 'The process serves requests', schema: z.object({ ok: z.literal(true) }) } },
  errors: [],
});
const READYZ_SCHEMA = operation({
  operationId: 'getReadiness',
  tag,
  summary: "Readiness: NATS and Postgres reachable, shards owned (this node's roles)",
  description: 'Answers within 3 s (INTERFACE §9.3).',
  auth: 'public',
  responses: {
    200: { description: 'Ready: send it traffic', schema: Readiness },
    503: { description: 'Not ready (a check failed, or shards are still being acquired)', schema: Readiness },
  },
  errors: [],
});
const METRICS_SCHEMA = operation({
  operationId: 'getMetrics',
  tag,
  summary: 'Prometheus metrics (text exposition format)',
  description: 'Served here unless SERVICE_METRICS_PORT moves it to a port of its own.',
  auth: 'public',
  responses: {
    200: { description: 'Prometheus text exposition format 0.0.4', schema: z.string(), contentType: 'text/plain' },
  },
  errors: [],
});

export const opsRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/healthz', { schema: HEALTHZ_SCHEMA }, async () => ({ ok: true }));

  // Readiness: NATS and Postgres reachable, shards owned (a node still acquiring its
  // share answers 503 so a load balancer sends it nothing yet).
  app.get('/readyz', { schema: READYZ_SCHEMA }, readinessHandler(ctx.ready));

  // INTERFACE §9.2: with SERVICE_METRICS_PORT set, /metrics lives on that port only
  // (`serveMetrics`) and the public port answers 404 like any unknown route.
  if (ctx.config.security.metricsPort === null) {
    app.get('/metrics', { schema: METRICS_SCHEMA }, metricsHandler(ctx.metrics.registry));
  }
};

function readinessHandler(ready: ReadinessCheck) {
  return async (_req: FastifyRequest, reply: FastifyReply) => {
    const report = await ready().catch(() => ({ ready: false, checks: {} }));
    return reply.code(report.ready ? 200 : 503).send(report);
  };
}

function metricsHandler(registry: Registry) {
  return async (_req: FastifyRequest, reply: FastifyReply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  };
}

/**
 * An ops listener beside the edge's port, on the same HOST: with `ready`, the ops routes alone
 * (a node without the edge, `serve --roles actors`, so probes and scraping reach every node),
 * `/metrics` among them unless `metrics` is false; without, SERVICE_METRICS_PORT's
 * `/metrics`-only listener.
 */
export async function serveOps(
  registry: Registry,
  opts: { host: string; port: number; ready: ReadinessCheck | null; metrics: boolean },
): Promise<{ url: string; close(): Promise<void> }> {
  // Every answer in the §2 shape with X-Request-Id, as on the edge (framework-errors.ts).
  const app = Fastify({ logger: false, ...FRAMEWORK_ERROR_OPTIONS });
  answerInContractShape(app);
  if (opts.ready) {
    app.get('/healthz', async () => ({ ok: true }));
    app.get('/readyz', readinessHandler(opts.ready));
  }
  if (opts.metrics) app.get('/metrics', metricsHandler(registry));
  const url = await app.listen({ host: opts.host, port: opts.port });
  return { url, close: () => app.close() };
}
