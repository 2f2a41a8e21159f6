/**
 * Response bodies of the HTTP API (INTERFACE §2, §3, §9.3): what the routes answer,
 * exactly. Each route serializes its success body through its schema (openapi.ts), so a
 * field named here is sent and a field not named is not, and the OpenAPI document is
 * generated from the same schemas. Where the contract allows extra fields (the error
 * object, backfill progress), the schema says so with `catchall`.
 *
 * Request schemas stay beside their routes, where they also validate.
 */
import { z } from 'zod';
import { CONNECTOR_IDS } from '../store/installs.js';
import { EDGE_TYPES, NODE_KINDS } from '../graph/kinds.js';
import { EMIT_KINDS } from './emit-request.js';

const ts = z.iso.datetime({ offset: true }).describe('ISO 8601 UTC');
const uuid = z.uuid();
const connectorId = z.enum(CONNECTOR_IDS);
const installStatus = z.enum(['active', 'suspended', 'uninstalled']);

/** INTERFACE §2: every error; extra fields allowed inside `error`. */
export const ErrorBody = z
  .object({
    error: z
      .object({
        code: z.string().describe('snake_case, e.g. bad_request, not_found, rate_limited'),
        message: z.string().describe('A human sentence; for upstream failures it carries the upstream message'),
        request_id: z.string().describe('the X-Request-Id of this request (INTERFACE §9.3)'),
      })
      .catchall(z.unknown())
      .describe('Extra fields name what failed, e.g. `install_path`, `upstream_status`, `field`'),
  })
  .meta({ id: 'Error' });

export const Connector = z
  .object({
    connector_id: connectorId,
    display_name: z.string(),
    auth_mode: z.enum(['oauth2', 'app_install']),
    enabled: z.boolean().describe('Whether the settings enable it'),
    install_path: z
      .string()
      .optional()
      .describe("Where to install when not through `/oauth/start` (spec §4): the code host's admin route"),
    inbound_transport: z
      .enum(['http', 'socket', 'none'])
      .optional()
      .describe(
        'chatapp: how live events arrive: the Events API route (`http`), Socket Mode (`socket`), or `none` ' +
          '(installs then only ever get their backfill)',
      ),
  })
  .meta({ id: 'Connector' });

const Backfill = z
  .object({
    state: z.enum(['pending', 'running', 'complete', 'failed']),
    updated_at: ts,
  })
  .catchall(z.unknown())
  .describe('The history backfill; extra progress fields per connector (INTERFACE §3)');

const CatchUp = z
  .object({
    state: z
      .enum(['none', 'pending', 'running', 'complete', 'failed'])
      .describe('`none` before the first gap; `pending` while a recorded gap waits for its end'),
    since: ts.nullable().describe('Start of the gap being (or to be) re-read'),
    recovered: z.int().min(0).describe('Messages of the gap found missing and ingested'),
    updated_at: ts.nullable(),
  })
  .catchall(z.unknown())
  .describe("Chat installs: gaps in the platform's deliveries and their re-read from history (INTERFACE §10.6)");

const Install = z
  .object({
    install_id: uuid,
    tenant_id: uuid,
    connector_id: connectorId,
    status: installStatus,
    external_id: z.string().describe('team id (chat) or installation id (code host)'),
    display_name: z.string().nullable(),
    created_at: ts,
    updated_at: ts,
    backfill: Backfill,
    catch_up: CatchUp.optional(),
  })
  .meta({ id: 'Install' });

/** INTERFACE §9.4: failing side effects are visible per install. */
const EffectsSummary = z
  .object({
    pending: z.int().min(0).describe('Effects still to run (retrying ones included)'),
    retrying: z.int().min(0).describe('Pending effects that failed at least once'),
    failed: z.int().min(0).describe('Effects given up after 24 hours of failures'),
    last_error: z.string().nullable().describe("The latest failure's cause"),
    last_error_at: ts.nullable(),
  })
  .describe("Side effects of the install's events (PR summary comment, slash replies, index syncs)");

/** `GET /api/v1/connectors/installs` and MCP `list_installs` (INTERFACE §10.3). */
export const InstallList = z.object({ installs: z.array(Install) });

export const InstallDetail = Install.extend({ effects: EffectsSummary }).meta({ id: 'InstallDetail' });

const coordinates = { install_id: uuid };
/** INTERFACE §3 health: a non-active install's status, or the connector's report after its round trip. */
export const InstallHealth = z
  .union([
    z.object({ ...coordinates, connector_id: connectorId, status: z.enum(['suspended', 'uninstalled']) }),
    z.object({
      ...coordinates,
      connector_id: z.literal('chatapp'),
      status: z.literal('healthy').describe('`auth.test` answered'),
      team_id: z.string(),
      team: z.string().nullable(),
      bot_user_id: z.string().nullable(),
    }),
    z.object({
      ...coordinates,
      connector_id: z.literal('codehost'),
      status: z.literal('healthy').describe('The App reads the installation and holds a valid token (spec §4.5)'),
      github_installation_id: z.int(),
      account_login: z.string().nullable(),
    }),
    z.object({
      ...coordinates,
      connector_id: z.literal('codehost'),
      status: z.literal('skeleton').describe('The code-host connector is not enabled on this deployment'),
    }),
  ])
  .meta({ id: 'InstallHealth' });

export const EmitReceipt = z
  .object({
    provider_id: z.string().describe('the platform id of what was written (INTERFACE §8.6)'),
    kind: z.enum(EMIT_KINDS),
    install_id: uuid,
    emitted_at: ts,
  })
  .meta({ id: 'EmitReceipt' });

export const GraphNode = z
  .object({
    id: uuid,
    kind: z.enum(NODE_KINDS),
    external_id: z.string(),
    connector_id: connectorId,
    install_id: uuid,
    props: z.record(z.string(), z.unknown()),
    source_status: installStatus.describe(
      'The status of the install that last wrote the node: `uninstalled` marks a node kept but no longer in sync',
    ),
    created_at: ts,
    updated_at: ts,
  })
  .meta({ id: 'GraphNode' });

export const GraphEdge = z
  .object({
    type: z.enum(EDGE_TYPES),
    from: uuid.describe('node id'),
    to: uuid.describe('node id'),
    props: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'GraphEdge' });

export const NodeWithEdges = GraphNode.extend({
  edges: z.array(GraphEdge),
  edges_truncated: z.boolean().describe('More edges touch the node than the answer names (at most 1000)'),
}).meta({ id: 'NodeWithEdges' });

export const IngestedEvent = z
  .object({
    id: z.string().describe('unique per install (INTERFACE §4)'),
    kind: z.string(),
    connector_id: connectorId,
    install_id: uuid,
    occurred_at: ts.nullable(),
    received_at: ts,
    payload: z.unknown(),
  })
  .meta({ id: 'IngestedEvent' });

/** An absolute http(s) URL a browser is sent to (§10.7). */
const browserUrl = z
  .url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' })
  .regex(/^https?:\/\//i, { message: 'must be an absolute http(s) URL' })
  .max(2_000)
  .meta({ format: 'uri' });

/** INTERFACE §3 `oauth/start`: where the installer goes next; the state binds tenant, connector and redirect_uri. */
export const OAuthStartBody = z
  .object({
    redirect_uri: z
      .url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' })
      .regex(/^https?:\/\//i, { message: 'must be an absolute http(s) URL' })
      .max(2_000)
      // A pattern hides zod's own `format: uri` in the JSON Schema; the value is still a URL.
      .meta({ format: 'uri' })
      .describe("Where the platform sends the installer back: this service's OAuth callback, as registered"),
    success_url: browserUrl.optional().describe("§10.7: where the installer's browser goes after a successful install"),
    failure_url: browserUrl.optional().describe("§10.7: where the installer's browser goes after a failed one"),
  })
  .strict();
export const OAuthStartAnswer = z
  .object({
    authorize_url: z.url().describe("The platform's consent page"),
    state: z.string().describe('Single use; expires in 10 minutes'),
    expires_at: ts,
  })
  .meta({ id: 'OAuthStart' });

/**
 * An actor's answer as the route's schema types it: actor protocols type loosely (a
 * connector's health report, a receipt's `kind` as a string); the answer is checked
 * against the schema on its way out, so a drift is a logged 500, never a wrong body.
 */
export type ActorAnswer<S extends z.ZodType> = z.output<S>;

/** A page of a listing: `next_cursor` null on the last one. */
export const nextCursor = z.string().nullable().describe('Pass as `cursor` for the next page; null on the last');

/** A listing's `limit` (query values are read as integers, query-numbers.ts). */
export const limitParam = (max: number, byDefault: number) =>
  z.int().min(1).max(max).optional().describe(`Default ${byDefault}`);

/**
 * An id in a path: a uuid, which the document says; the route answers anything else with
 * 404 like an unknown id (INTERFACE §2), so the server itself does not refuse it as malformed.
 */
const idParam = (what: string) =>
  z.string().meta({ format: 'uuid' }).describe(`${what}; anything else answers 404 like an unknown id`);

/** A listing's `install_id` filter (its uuid, or the 404 of a foreign or unknown install). */
export const installIdFilter = (what: string) =>
  z
    .string()
    .min(1)
    .max(100)
    .meta({ format: 'uuid' })
    .optional()
    .describe(`Only this install's ${what}; another tenant's or an unknown id answers 404`);

export const InstallIdParams = z.object({ installId: idParam('An install id') }).strict();
export const NodeIdParams = z.object({ nodeId: idParam('A graph node id') }).strict();

/** INTERFACE §9.3: 1-255 visible ASCII characters (checked in edge/idempotency.ts, which uses this pattern). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z
    .string()
    .regex(IDEMPOTENCY_KEY)
    .optional()
    .describe('Same key and body within 24 h answer the first receipt again; another body 409'),
});
