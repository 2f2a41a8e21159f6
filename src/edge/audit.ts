/**
 * Audited routes (INTERFACE §10.5 `GET /api/v1/audit`): a route whose config names an
 * `audit` action has its entries written with the key id, the request id, what it acted on
 * and its outcome (`ok` or the §2 error code it answered).
 *
 * An action that is done writes its `ok` entry itself, in the transaction that commits it
 * (`auditStamp` names the entry; the stamp travels to the actor that acts), or, for an
 * upstream write, in the transaction that stores its receipt: an entry is never committed
 * without its action, nor an action without its entry. A call that answers an error (refused,
 * failed, timed out) gets its entry here, on the service's own login, before the answer
 * leaves; a failure to write that one is logged and never changes the answer. A call that did
 * nothing new (an Idempotency-Key's replayed answer, an uninstall of what was uninstalled)
 * adds no entry: the action's entry is the first call's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Internal } from '../errors.js';
import type { Logger } from '../log.js';
import { recordAudit, type AuditStamp } from '../store/audit-log.js';
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

/**
 * The `ok` entry of this audited route's call, for the transaction that performs its action
 * to write (`recordAuditOk`); `target` when the action knows it better than the request does.
 */
export function auditStamp(req: FastifyRequest, target?: string | null): AuditStamp {
  const spec = req.routeOptions.config?.audit;
  if (!spec) throw new Internal(`route ${req.routeOptions.url ?? '?'} is not audited`);
  return { action: spec.action, keyId: keyIdOf(req), requestId: req.id, target: target ?? targetOf(spec, req, null) };
}

function targetOf(spec: AuditSpec, req: FastifyRequest, answer: unknown): string | null {
  try {
    return spec.target?.(req, answer) ?? null;
  } catch {
    return null; // an odd body names nothing; the entry is still written
  }
}

export function recordAudited(app: FastifyInstance, deps: { db: Queryable; log: Logger }): void {
  app.addHook('onSend', async (req, reply, payload) => {
    const spec = req.routeOptions.config?.audit;
    // Only a call a tenant's key made: an unauthenticated one names no tenant.
    if (!spec || typeof req.tenantId !== 'string') return payload;
    // Done: its entry was committed with the action (auditStamp).
    if (reply.statusCode < 400) return payload;
    const answer = parsed(payload);
    const target = targetOf(spec, req, answer);
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
  /** INTERFACE §10.5: a platform user forgotten. */
  erase: {
    action: 'erase',
    target: (req) => {
      const b = req.body as { install_id?: unknown; user_external_id?: unknown } | undefined;
      if (typeof b?.install_id !== 'string') return null;
      const user = typeof b.user_external_id === 'string' ? ` user/${b.user_external_id.slice(0, 255)}` : '';
      return `install/${b.install_id.toLowerCase()}${user}`;
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
