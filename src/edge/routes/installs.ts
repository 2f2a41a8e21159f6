/**
 * Install routes (spec §4, INTERFACE §3): list, get, delete (uninstall), emit, health.
 * Reads are answered from Postgres here; everything that acts (uninstall, emit, health's
 * upstream round trip) is a request to the install's actor, the single writer of its
 * lifecycle, wherever in the cluster it lives.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CONNECTOR_IDS } from '../../store/installs.js';
import { installKey, installWritesKey } from '../../actors/install-protocol.js';
import { summarizeEffects } from '../../store/effects.js';
import { listInstalls } from '../../store/installs.js';
import { BadConfig } from '../../errors.js';
import { AUDITED, auditStamp } from '../audit.js';
import type { EdgeContext } from '../context.js';
import { EMIT_ERRORS, EmitRequest, UNOWNED_MS } from '../emit-request.js';
import { idempotent } from '../idempotency.js';
import { countEmit, countRefusedEmit } from '../metrics.js';
import { operation } from '../operation.js';
import { ownInstall, validInput } from '../params.js';
import {
  type ActorAnswer,
  EmitReceipt,
  IdempotencyHeaders,
  InstallDetail,
  InstallHealth,
  InstallIdParams,
  InstallList,
} from '../schemas.js';

const ListQuery = z.object({ connector_id: z.enum(CONNECTOR_IDS).optional() }).strict();

const tag = 'installs';
const LIST = operation({
  operationId: 'listInstalls',
  tag,
  summary: "List the tenant's installs, newest first",
  auth: 'bearer',
  scope: 'installs:read',
  querystring: ListQuery,
  responses: { 200: { description: "The tenant's installs", schema: InstallList } },
  errors: ['bad_request'],
});
const GET = operation({
  operationId: 'getInstall',
  tag,
  summary: 'One install with its backfill progress and side effects',
  auth: 'bearer',
  scope: 'installs:read',
  params: InstallIdParams,
  responses: { 200: { description: 'The install', schema: InstallDetail } },
  errors: ['not_found'],
});
const DELETE = operation({
  operationId: 'uninstall',
  tag,
  summary: 'Uninstall (idempotent): revokes upstream, releases the workspace claim',
  description: 'An upstream refusal other than "token already dead" answers 502 and changes nothing locally.',
  auth: 'bearer',
  scope: 'installs:write',
  params: InstallIdParams,
  responses: {
    200: {
      description: 'The install is uninstalled (also when it already was)',
      schema: z.object({ install_id: z.uuid(), status: z.literal('uninstalled') }),
    },
  },
  errors: ['not_found', 'upstream_error', 'credentials_unreadable'],
});
const EMIT = operation({
  operationId: 'emit',
  tag,
  summary: 'Emit a write upstream: a chat message or reaction, a code-host comment, label or status',
  description:
    "The kind must be one of the install's connector (else 400 `bad_config`). Takes an `Idempotency-Key` " +
    'header: the same key and body within 24 h answer the first receipt again; another body answers 409 ' +
    '`idempotency_key_reused`. A throttled channel, or a workspace budget still spent after 10 s, answers 429.',
  auth: 'bearer',
  scope: 'installs:write',
  params: InstallIdParams,
  headers: IdempotencyHeaders,
  body: EmitRequest,
  responses: { 200: { description: 'The write was made upstream', schema: EmitReceipt } },
  errors: EMIT_ERRORS,
});
const HEALTH = operation({
  operationId: 'getInstallHealth',
  tag,
  summary: "The install's upstream health (a round trip to the platform)",
  description: 'A non-active install answers 200 with its status; an unreachable platform 503.',
  auth: 'bearer',
  scope: 'installs:read',
  params: InstallIdParams,
  responses: { 200: { description: "The install's health", schema: InstallHealth } },
  errors: ['not_found', 'credentials_unreadable'],
});

/** Emits wait up to 10 s for a workspace token (INTERFACE §3), plus the upstream call. */
const EMIT_TIMEOUT_MS = 25_000;

export const installRoutes: FastifyPluginAsync<EdgeContext> = async (plugin, ctx) => {
  const app = plugin.withTypeProvider<ZodTypeProvider>();
  app.get('/connectors/installs', { schema: LIST, attachValidation: true }, async (req) => {
    const q = validInput<z.output<typeof ListQuery>>(req, 'querystring');
    return { installs: await listInstalls(ctx.db, req.tenantId, q.connector_id) };
  });

  app.get('/connectors/installs/:installId', { schema: GET }, async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    // INTERFACE §9.4: failing side effects are visible per install.
    return { ...install, effects: await summarizeEffects(ctx.db, install.install_id) };
  });

  app.delete(
    '/connectors/installs/:installId',
    { schema: DELETE, config: { audit: AUDITED.uninstall } },
    async (req) => {
      const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
      // Idempotent: deleting an uninstalled install answers the same 200.
      if (install.status === 'uninstalled') return { install_id: install.install_id, status: 'uninstalled' as const };
      return ctx.actors.ask(
        installKey(install.install_id),
        { type: 'uninstall', tenantId: req.tenantId, audit: auditStamp(req) },
        { timeoutMs: 20_000, unownedMs: UNOWNED_MS },
      );
    },
  );

  app.post(
    '/connectors/installs/:installId/emit',
    { schema: EMIT, attachValidation: true, config: { audit: AUDITED.emit } },
    async (req, reply) => {
      const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
      // INTERFACE §3: an invalid kind or body is `bad_config` (JSON that does not parse stays `bad_request`).
      let body: EmitRequest;
      try {
        body = validInput<EmitRequest>(req, 'body', BadConfig);
      } catch (err) {
        countRefusedEmit(ctx.metrics, (req.body as { kind?: unknown } | null)?.kind, err);
        throw err;
      }
      return idempotent(ctx, req, reply, `emit:${install.install_id}`, body, (idempotencyKey) =>
        countEmit(
          ctx.metrics,
          body.kind,
          ctx.actors.ask(
            installWritesKey(install.install_id),
            {
              type: 'emit',
              tenantId: req.tenantId,
              kind: body.kind,
              body: body.body,
              idempotencyKey,
              audit: auditStamp(req),
            },
            { timeoutMs: EMIT_TIMEOUT_MS, unownedMs: UNOWNED_MS },
          ),
        ),
      ) as Promise<ActorAnswer<typeof EmitReceipt>>;
    },
  );

  app.get('/connectors/installs/:installId/health', { schema: HEALTH }, async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    // A non-active install answers 200 with its install status (INTERFACE §3).
    if (install.status !== 'active') {
      return { install_id: install.install_id, connector_id: install.connector_id, status: install.status };
    }
    // A read: resent to the next owner if its node dies mid-request (INTERFACE §8.24).
    return ctx.actors.ask(
      installWritesKey(install.install_id),
      { type: 'health', tenantId: req.tenantId },
      { timeoutMs: 15_000, idempotent: true, unownedMs: UNOWNED_MS },
    ) as Promise<ActorAnswer<typeof InstallHealth>>;
  });
};
