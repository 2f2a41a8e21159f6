/**
 * One route's entry in the OpenAPI document (INTERFACE §9.3), built from the zod schemas
 * the route validates its input with and answers through, so the document cannot drift
 * from the server: requests are validated by these schemas, success bodies are serialized
 * through them (openapi.ts sets fastify's serializer), and every error the route can
 * answer is listed by its §2 code, with the status the edge's one table gives its kind.
 *
 * A new route:
 *
 *     const GET_THING = operation({
 *       operationId: 'getThing',
 *       tag: 'graph',
 *       summary: 'One thing',
 *       auth: 'bearer',
 *       params: ThingIdParams,
 *       responses: { 200: { description: 'The thing', schema: Thing } },
 *       errors: ['not_found'],
 *     });
 *     app.withTypeProvider<ZodTypeProvider>().get('/things/:thingId', { schema: GET_THING }, handler);
 *
 * The type provider checks what the handler returns against the response schemas; the
 * errors every route of its kind can answer are added here (`errorsOf`), so a route lists
 * only its own. A keyed route names the API-key scope it needs (INTERFACE §10.4), `scope:
 * 'graph:read'` or `'any'` (any valid key): the document shows it as the Bearer requirement's
 * scope and in the description, and the tenant guard (tenant-guard.ts) checks it, reading it
 * from here, so the two cannot disagree. A keyed route without one does not compile, and one
 * registered without one stops the node at start.
 */
import { z } from 'zod';
import { isApiScope, type ScopeNeed } from '../api-scopes.js';
import type { ErrorCode, ErrorKind } from '../errors.js';
import { STATUS_OF } from './error-map.js';

/**
 * Who may call: `bearer` a tenant's API key; `admin` the admin token and a tenant's key
 * (INTERFACE §3 admin install); `public` nobody's key (ops routes, the document, and the
 * routes that authenticate otherwise: the OAuth state, Slack's and GitHub's signatures).
 */
export type Auth = 'bearer' | 'admin' | 'public';

/** The document's tags, in the order `/docs` shows them. */
export const TAGS = {
  connectors: 'The connectors of this build and how each installs',
  installs: "A tenant's installs: list, inspect, uninstall, emit writes upstream, health, the ingest log",
  graph: "The tenant's knowledge graph: nodes, their edges, and actions on them",
  'dead-letters': 'Events that could not be stored, and their replay',
  audit: "Who did what with the tenant's keys",
  webhooks: "Signed deliveries of the tenant's graph changes to its own endpoints (Standard Webhooks)",
  chatapp: 'The Slack connector: OAuth install and the Events API receiver',
  codehost: 'The GitHub App connector: admin install and the webhook receiver',
  operations: 'Liveness, readiness and metrics for the platform running the service',
  documentation: 'This document and the page rendering it',
  agents: 'Tools for agents: a Model Context Protocol server on the same tenant API (INTERFACE §10.3)',
} as const;
type Tag = keyof typeof TAGS;

/** One success answer: its description and the zod schema its body is serialized through. */
interface Answer<S extends z.ZodType = z.ZodType> {
  description: string;
  /** Absent: an answer with no body (MCP's 202 to a notification). */
  schema?: S;
  /** Default `application/json`. */
  contentType?: string;
  /**
   * The same answer in other media types, chosen by the request's `Accept` (the change feed's
   * `text/event-stream`, INTERFACE §10.1): a route answering one of these writes it itself.
   */
  also?: Record<string, z.ZodType>;
}

/** An error the route answers: a §2 code (answered with its usual kind), or a kind and code. */
export type ErrorCase = ErrorCode | { kind: ErrorKind; code: ErrorCode };

interface OperationFields {
  /** Unique, camelCase: the method name a generated client gets. */
  operationId: string;
  tag: Tag;
  summary: string;
  description?: string;
  params?: z.ZodType;
  querystring?: z.ZodType;
  headers?: z.ZodType;
  body?: z.ZodType;
  responses: Record<number, Answer>;
  /** The errors particular to this route; errorsOf adds those every route of its kind answers. */
  errors: readonly ErrorCase[];
}

/** A route nobody's key opens, or a keyed one with the scope it needs (INTERFACE §10.4). */
export type OperationSpec = OperationFields &
  ({ auth: 'public'; scope?: never } | { auth: Exclude<Auth, 'public'>; scope: ScopeNeed });

type ResponseSchemas<R extends Record<number, Answer>> = {
  [K in keyof R]: {
    description: string;
    content: Record<string, { schema: R[K] extends Answer<infer Z> ? Z : never }>;
  };
};

/** Where a route's schema keeps its errors, for openapi.ts (fastify and the JSON Schema transform ignore it). */
const ERRORS = Symbol('operation errors');
/** Where a keyed route's schema keeps the scope it needs, for the tenant guard. */
const SCOPE = Symbol('operation scope');

/** What fastify and @fastify/swagger read from a route's `schema`. */
export type OperationSchema<S extends OperationSpec> = Pick<S, 'params' | 'querystring' | 'headers' | 'body'> & {
  operationId: string;
  summary: string;
  description?: string;
  tags: [Tag];
  security: Array<Record<string, string[]>>;
  response: ResponseSchemas<S['responses']>;
  [ERRORS]: readonly ErrorCase[];
  [SCOPE]?: ScopeNeed;
};

/** The document's security requirement: the Bearer key's scope as its "role name" (OpenAPI 3.1 §4.8.30). */
function securityOf(spec: OperationSpec): Array<Record<string, string[]>> {
  if (spec.auth === 'public') return [];
  const bearerAuth = spec.scope === 'any' ? [] : [spec.scope];
  return spec.auth === 'admin' ? [{ adminToken: [], bearerAuth }] : [{ bearerAuth }];
}

function describeScope(spec: OperationSpec): string | undefined {
  if (spec.auth === 'public') return spec.description;
  const needs =
    spec.scope === 'any'
      ? 'Any valid API key (no scope needed).'
      : `Needs an API key with the scope \`${spec.scope}\`.`;
  return spec.description === undefined ? needs : `${spec.description}\n\n${needs}`;
}

export function operation<const S extends OperationSpec>(spec: S): OperationSchema<S> {
  if (spec.auth !== 'public' && !(spec.scope === 'any' || isApiScope(spec.scope ?? ''))) {
    throw new Error(`${spec.operationId}: a keyed route names the scope it needs (INTERFACE §10.4)`);
  }
  if (spec.auth === 'public' && (spec as { scope?: unknown }).scope !== undefined) {
    throw new Error(`${spec.operationId}: a public route has no scope`);
  }
  const errors = errorsOf(spec);
  for (const e of errors) {
    const status = statusOf(e);
    if (status in spec.responses) throw new Error(`${spec.operationId}: ${status} is both an answer and an error`);
  }
  const response = {} as Record<
    number,
    { description: string; content: Record<string, { schema: z.ZodType }> } | z.ZodType
  >;
  for (const [status, answer] of Object.entries(spec.responses) as Array<[string, Answer]>) {
    // No body: a `null` schema, which @fastify/swagger documents as an answer without content.
    response[Number(status)] =
      answer.schema === undefined
        ? z.null().describe(answer.description)
        : {
            description: answer.description,
            content: {
              [answer.contentType ?? 'application/json']: { schema: answer.schema },
              ...Object.fromEntries(Object.entries(answer.also ?? {}).map(([type, schema]) => [type, { schema }])),
            },
          };
  }
  const schema = {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(describeScope(spec) === undefined ? {} : { description: describeScope(spec) }),
    tags: [spec.tag] as [Tag],
    security: securityOf(spec),
    ...(spec.params === undefined ? {} : { params: spec.params }),
    ...(spec.querystring === undefined ? {} : { querystring: spec.querystring }),
    ...(spec.headers === undefined ? {} : { headers: spec.headers }),
    ...(spec.body === undefined ? {} : { body: spec.body }),
    response,
    [ERRORS]: errors,
    ...(spec.auth === 'public' ? {} : { [SCOPE]: spec.scope }),
  };
  return schema as unknown as OperationSchema<S>;
}

/**
 * The route's own errors and those of its kind: any route can fail unexpectedly (500
 * `internal`); a keyed route refuses a missing or wrong key (401), a tenant past its rate
 * (429) and answers 503 when Postgres does not (the key is looked up there, INTERFACE
 * §9.3), and one that needs a scope refuses a key without it (403, §10.4); a route with a
 * body refuses malformed JSON (400) and a body past its limit (413).
 */
export function errorsOf(spec: {
  auth: Auth;
  scope?: ScopeNeed;
  body?: z.ZodType;
  errors: readonly ErrorCase[];
}): ErrorCase[] {
  const common: ErrorCase[] = ['internal'];
  if (spec.auth !== 'public') common.push('unauthorized', 'rate_limited', 'unavailable');
  if (spec.auth !== 'public' && spec.scope !== undefined && spec.scope !== 'any') common.push('forbidden');
  if (spec.body !== undefined) common.push('bad_request', 'payload_too_large');
  const seen = new Set<string>();
  return [...spec.errors, ...common].filter((e) => {
    const key = typeof e === 'string' ? e : `${e.kind}:${e.code}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The HTTP status of an error case: its kind's, from the edge's one table. */
export function statusOf(e: ErrorCase): number {
  return STATUS_OF[typeof e === 'string' ? KIND_OF_CODE[e] : e.kind];
}

/** The scope a route's schema says it needs; undefined for a public route or one not made by operation(). */
export function scopeOfSchema(schema: unknown): ScopeNeed | undefined {
  return typeof schema === 'object' && schema !== null ? (schema as { [SCOPE]?: ScopeNeed })[SCOPE] : undefined;
}

export function errorsOfSchema(schema: unknown): readonly ErrorCase[] | undefined {
  return typeof schema === 'object' && schema !== null
    ? (schema as { [ERRORS]?: readonly ErrorCase[] })[ERRORS]
    : undefined;
}

/**
 * The kind each code is answered with on the HTTP routes (its status is `STATUS_OF` of
 * that kind, error-map.ts). A code answered with another kind somewhere is listed there
 * as `{ kind, code }` (the admin install's 500 `not_configured`).
 */
const KIND_OF_CODE: Record<ErrorCode, ErrorKind> = {
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'NotFound',
  bad_request: 'BadRequest',
  bad_config: 'BadConfig',
  conflict: 'Conflict',
  cursor_expired: 'Gone',
  payload_too_large: 'PayloadTooLarge',
  method_not_allowed: 'MethodNotAllowed',
  request_timeout: 'RequestTimeout',
  uri_too_long: 'UriTooLong',
  headers_too_large: 'HeadersTooLarge',
  rate_limited: 'RateLimited',
  not_configured: 'NotConfigured',
  upstream_error: 'UpstreamError',
  unavailable: 'Unavailable',
  internal: 'Internal',
  access_denied: 'BadRequest',
  already_installed: 'Conflict',
  credentials_unreadable: 'Internal',
  custom_install_path: 'BadRequest',
  install_not_active: 'Conflict',
  idempotency_key_reused: 'Conflict',
  installation_not_accessible: 'BadRequest',
  invalid_state: 'BadRequest',
  upstream_forbidden: 'UpstreamError',
  user_exists: 'Conflict',
  workspace_already_installed: 'Conflict',
};
