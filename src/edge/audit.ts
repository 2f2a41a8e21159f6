/**
 * Audited routes (INTERFACE §10.5 `GET /api/v1/audit`): a route whose config names an
 * `audit` action gets one entry per call that a tenant's key made, written before the answer
 * leaves (so a client that has its answer finds the entry), with the key id, the request id,
 * what it acted on and its outcome (`ok` or the §2 error code it answered). Upstream writes
 * (emit, node actions, uninstall) are recorded with their receipt; the entry is written by
 * the service's own login (an entry records the call, whatever the tenant scope allowed).
 * A failure to write one is logged and never changes the answer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../log.js';
import { recordAudit } from '../store/audit-log.js';
import type { Queryable } from '../store/db.js';
import { awaitWithinBudget, outsideWaitBudget } from '../wait-budget.js';

export interface AuditSpec {
  action: string;
  /** What the call acts on, from its params and body or its answer; null when nothing names it. */
  target?(req: FastifyRequest, answer: unknown): string | null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Audited (audit.ts): one entry per call of a tenant's key. */
    audit?: AuditSpec;
  }
}

/** The API key that authenticated the request, once the edge knows it (INTERFACE §10.4 scoped keys). */
export function keyIdOf(req: FastifyRequest): string | null {
  const key = (req as { apiKey?: { keyId?: unknown } }).apiKey;
  return typeof key?.keyId === 'string' ? key.keyId : null;
}

function parsed(payload: unknown): unknown {
  if (typeof payload !== 'string') return null;
  try {
    return JSON.parse(payload) as unknown;
  } catch {
    return null;
  }
}

function outcomeOf(reply: FastifyReply, answer: unknown): string {
  if (reply.statusCode < 400) return 'ok';
  const code = (answer as { error?: { code?: unknown } } | null)?.error?.code;
  return typeof code === 'string' ? code : `http_${reply.statusCode}`;
}

export function recordAudited(app: FastifyInstance, deps: { db: Queryable; log: Logger }): void {
  app.addHook('onSend', async (req, reply, payload) => {
    const spec = req.routeOptions.config?.audit;
    // Only a call a tenant's key made: an unauthenticated one names no tenant.
    if (!spec || typeof req.tenantId !== 'string') return payload;
    const answer = parsed(payload);
    let target: string | null;
    try {
      target = spec.target?.(req, answer) ?? null;
    } catch {
      target = null; // an odd body names nothing; the entry is still written
    }
    const outcome = outcomeOf(reply, answer);
    const entry = {
      tenantId: req.tenantId,
      action: spec.action,
      keyId: keyIdOf(req),
      requestId: req.id,
      target,
      outcome,
    };
    // The entry is written on its own bounds, not cut by what the request left of its budget.
    const writing = outsideWaitBudget(() => recordAudit(deps.db, entry)).catch((err: unknown) =>
      deps.log.error({ err, action: spec.action }, 'audit entry not written'),
    );
    // INTERFACE §9.3: the answer waits for its entry only within the request's 2 s of waiting
    // (src/wait-budget.ts), so an `unavailable` answer leaves at once; an entry Postgres has
    // not taken by then is written when it answers.
    if (outcome !== 'unavailable') await awaitWithinBudget(writing);
    return payload;
  });
}

const param =
  (name: string, prefix: string) =>
  (req: FastifyRequest): string | null => {
    const v = (req.params as Record<string, unknown> | undefined)?.[name];
    return typeof v === 'string' ? `${prefix}/${v.toLowerCase()}` : null;
  };

/** The audited actions of the routes (INTERFACE §10.5), each with what it acts on. */
export const AUDITED = {
  uninstall: { action: 'uninstall', target: param('installId', 'install') },
  emit: {
    action: 'emit',
    target: (req) => {
      const kind = (req.body as { kind?: unknown } | undefined)?.kind;
      const install = param('installId', 'install')(req);
      return install && typeof kind === 'string' ? `${install} ${kind.slice(0, 64)}` : install;
    },
  },
  nodeAction: { action: 'node_action', target: param('nodeId', 'node') },
  deadLetterReplay: { action: 'dead_letter_replay', target: param('id', 'dead-letter') },
  export: {
    action: 'export',
    target: (req) => {
      const id = (req.query as { install_id?: unknown } | undefined)?.install_id;
      return typeof id === 'string' ? `install/${id.toLowerCase()}` : 'graph';
    },
  },
  /** INTERFACE §10.2: a webhook created, changed, deleted or given a new secret. */
  webhookChange: {
    action: 'webhook_change',
    target: (req, answer) => {
      const id = (answer as { id?: unknown } | null)?.id;
      return param('webhookId', 'webhook')(req) ?? (typeof id === 'string' ? `webhook/${id}` : null);
    },
  },
  install: {
    action: 'install',
    target: (_req, answer) => {
      const id = (answer as { install_id?: unknown } | null)?.install_id;
      return typeof id === 'string' ? `install/${id}` : null;
    },
  },
} satisfies Record<string, AuditSpec>;
