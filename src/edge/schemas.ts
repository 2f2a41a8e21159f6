/**
 * Response schemas of the HTTP API (INTERFACE §2, §3), for the OpenAPI document
 * (`/openapi.json`, src/edge/openapi.ts). Request schemas stay beside their routes, where
 * they also validate; these describe what the routes answer and are not enforced on the
 * way out (a drift would otherwise turn a good answer into a 500).
 */
import { z } from 'zod';

const ts = z.iso.datetime({ offset: true }).describe('ISO 8601 UTC');
const uuid = z.uuid();

/** INTERFACE §2: every error; extra fields allowed inside `error`. */
export const ErrorBody = z
  .object({
    error: z
      .object({
        code: z.string().describe('snake_case, e.g. bad_request, not_found, rate_limited'),
        message: z.string(),
        request_id: z.string().describe('the X-Request-Id of this request (INTERFACE §9.3)'),
      })
      .catchall(z.unknown()),
  })
  .meta({ id: 'Error' });

export const Connector = z
  .object({
    connector_id: z.enum(['chatapp', 'codehost']),
    display_name: z.string(),
    auth_mode: z.enum(['oauth2', 'app_install']),
    enabled: z.boolean(),
    install_path: z.string().optional(),
  })
  .meta({ id: 'Connector' });

export const Install = z
  .object({
    install_id: uuid,
    tenant_id: uuid,
    connector_id: z.enum(['chatapp', 'codehost']),
    status: z.string().describe('active, uninstalled (or suspended)'),
    external_id: z.string().describe('team id (chat) or installation id (code host)'),
    display_name: z.string().nullable(),
    created_at: ts,
    updated_at: ts,
    backfill: z
      .object({ state: z.enum(['pending', 'running', 'complete', 'failed']), updated_at: ts.nullable() })
      .catchall(z.unknown()),
  })
  .meta({ id: 'Install' });

export const EmitReceipt = z
  .object({
    provider_id: z.string().describe('the platform id of what was written (INTERFACE §8.6)'),
    kind: z.string(),
    install_id: uuid,
    emitted_at: ts,
  })
  .catchall(z.unknown())
  .meta({ id: 'EmitReceipt' });

export const GraphNode = z
  .object({
    id: z.string(),
    kind: z.string(),
    external_id: z.string(),
    connector_id: z.string(),
    install_id: uuid,
    props: z.record(z.string(), z.unknown()),
    created_at: ts,
    updated_at: ts,
  })
  .catchall(z.unknown())
  .meta({ id: 'GraphNode' });

export const GraphEdge = z
  .object({ type: z.string(), from: z.string(), to: z.string(), props: z.record(z.string(), z.unknown()) })
  .meta({ id: 'GraphEdge' });

export const IngestedEvent = z
  .object({
    id: z.string(),
    kind: z.string(),
    connector_id: z.string(),
    install_id: uuid,
    occurred_at: ts.nullable(),
    received_at: ts,
    payload: z.unknown(),
  })
  .meta({ id: 'IngestedEvent' });

export const InstallIdParams = z.object({ installId: z.string().describe('install id (uuid)') });
export const NodeIdParams = z.object({ nodeId: z.string().describe('graph node id') });

/** A JSON object whose fields the route documents in prose (health reports, webhook acks). */
export const LooseObject = z.object({}).catchall(z.unknown());

/** INTERFACE §9.3: emits and node actions take an Idempotency-Key (checked in edge/idempotency.ts). */
export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z
    .string()
    .optional()
    .describe('1-255 visible ASCII characters; same key and body within 24 h replay the first receipt'),
});
