/**
 * What every edge route plugin is handed (the edge's contract with its routes, including
 * the connector routes under `routes/chatapp/` and `routes/codehost/`), and the body limits
 * of INTERFACE §2.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { FeedWaker } from '../runtime/feed-notices.js';
import type { ActorAsk } from '../runtime/ports.js';
import type { Queryable } from '../store/db.js';
import type { TenantAuth, TenantResolver } from './auth.js';
import type { EdgeMetrics } from './metrics.js';
import type { ByteBudget } from './raw-body.js';

export const TENANT_BODY_LIMIT = 1024 * 1024;
export const WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024;

interface ReadinessReport {
  ready: boolean;
  checks: Record<string, boolean>;
}
export type ReadinessCheck = () => Promise<ReadinessReport>;

export interface EdgeDeps {
  config: Readonly<Config>;
  log: Logger;
  db: Queryable;
  /**
   * The database fence (README "Security model"): a tenant-scoped pool of the application
   * role (src/store/tenant-scope.ts) used as `db` by the tenant routes, so their queries
   * see only the caller's rows. Absent: tenant routes use `db`.
   */
  tenantDb?: Queryable;
  actors: ActorAsk;
  resolveTenant: TenantResolver;
  /** The key cache, when the node keeps it fresh (revocations heard cluster-wide, INTERFACE §9.1). */
  auth?: TenantAuth;
  ready: ReadinessCheck;
  metrics: EdgeMetrics;
  /**
   * Wakes the change feed's held requests when a tenant's feed advances (INTERFACE §10.1).
   * Absent (an edge built without NATS): they re-read every second instead.
   */
  feed?: FeedWaker;
  /** Connector route groups (OAuth, webhooks, admin install) registered by the node. */
  plugins?: Array<{ plugin: FastifyPluginAsync<EdgeContext>; prefix?: string }>;
}

/**
 * Handed to every route plugin. A route that needs the tenant's Bearer key asks for it with
 * `config: { tenant: true }` (tenant-guard.ts); no plugin authenticates by itself.
 */
export interface EdgeContext extends EdgeDeps {
  /** The node's budget of unverified webhook bytes in memory (INTERFACE §9.3; raw-body.ts). */
  unverifiedBytes: ByteBudget;
  feed: FeedWaker;
}
