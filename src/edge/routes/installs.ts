/**
 * Install routes (spec §4, INTERFACE §3): list, get, delete (uninstall), emit, health.
 * Reads are answered from Postgres here; everything that acts (uninstall, emit, health's
 * upstream round trip) is a request to the install's actor, the single writer of its
 * lifecycle, wherever in the cluster it lives.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { CONNECTOR_IDS } from '../../connectors/catalog.js';
import { installKey, installWritesKey } from '../../actors/install-protocol.js';
import { summarizeEffects } from '../../store/effects.js';
import { listInstalls } from '../../store/installs.js';
import { BadConfig } from '../../errors.js';
import type { EdgeContext } from '../context.js';
import { idempotent } from '../idempotency.js';
import { countEmit } from '../metrics.js';
import { ownInstall, validInput } from '../params.js';
import { EmitReceipt, IdempotencyHeaders, Install, InstallIdParams, LooseObject } from '../schemas.js';

const ListQuery = z.object({ connector_id: z.enum(CONNECTOR_IDS).optional() }).strict();
const EmitBody = z.object({ kind: z.string().min(1).max(100), body: z.record(z.string(), z.unknown()) }).strict();

const tags = ['installs'];
const LIST_SCHEMA = {
  summary: "List the tenant's installs, newest first",
  tags,
  querystring: ListQuery,
  response: { 200: z.object({ installs: z.array(Install) }) },
};
const GET_SCHEMA = {
  summary: 'One install with its backfill progress',
  tags,
  params: InstallIdParams,
  response: { 200: Install },
};
const DELETE_SCHEMA = {
  summary: 'Uninstall (idempotent): revokes upstream, releases the workspace claim',
  tags,
  params: InstallIdParams,
  response: { 200: z.object({ install_id: z.string(), status: z.literal('uninstalled') }) },
};
const EMIT_SCHEMA = {
  summary: 'Emit a write upstream (chatapp.message, chatapp.reaction, codehost.*)',
  description:
    'Takes an `Idempotency-Key` header (1-255 visible ASCII): the same key and body within 24 h ' +
    'answer the first receipt again; another body answers 409 `idempotency_key_reused`.',
  tags,
  params: InstallIdParams,
  headers: IdempotencyHeaders,
  body: EmitBody,
  response: { 200: EmitReceipt },
};
const HEALTH_SCHEMA = {
  summary: "The install's upstream health (a round trip to the platform)",
  tags,
  params: InstallIdParams,
  response: {
    200: LooseObject.extend({ install_id: z.string(), connector_id: z.string(), status: z.string() }),
  },
};

/** Emits wait up to 10 s for a workspace token (INTERFACE §3), plus the upstream call. */
const EMIT_TIMEOUT_MS = 25_000;

export const installRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/connectors/installs', { schema: LIST_SCHEMA, attachValidation: true }, async (req) => {
    const q = validInput<z.output<typeof ListQuery>>(req, 'querystring');
    return { installs: await listInstalls(ctx.db, req.tenantId, q.connector_id) };
  });

  app.get<{ Params: { installId: string } }>('/connectors/installs/:installId', { schema: GET_SCHEMA }, async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    // INTERFACE §9.4: failing side effects are visible per install.
    return { ...install, effects: await summarizeEffects(ctx.db, install.install_id) };
  });

  app.delete<{ Params: { installId: string } }>(
    '/connectors/installs/:installId',
    { schema: DELETE_SCHEMA },
    async (req) => {
      const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
      // Idempotent: deleting an uninstalled install answers the same 200.
      if (install.status === 'uninstalled') return { install_id: install.install_id, status: 'uninstalled' };
      return ctx.actors.ask(
        installKey(install.install_id),
        { type: 'uninstall', tenantId: req.tenantId },
        { timeoutMs: 20_000 },
      );
    },
  );

  app.post<{ Params: { installId: string } }>(
    '/connectors/installs/:installId/emit',
    { schema: EMIT_SCHEMA, attachValidation: true },
    async (req, reply) => {
      const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
      // INTERFACE §3: an invalid kind or body is `bad_config` (JSON that does not parse stays `bad_request`).
      const body = validInput<z.output<typeof EmitBody>>(req, 'body', BadConfig);
      return idempotent(ctx, req, reply, `emit:${install.install_id}`, body, (idempotencyKey) =>
        countEmit(
          ctx.metrics,
          body.kind,
          ctx.actors.ask(
            installWritesKey(install.install_id),
            { type: 'emit', tenantId: req.tenantId, kind: body.kind, body: body.body, idempotencyKey },
            { timeoutMs: EMIT_TIMEOUT_MS },
          ),
        ),
      );
    },
  );

  app.get<{ Params: { installId: string } }>(
    '/connectors/installs/:installId/health',
    { schema: HEALTH_SCHEMA },
    async (req) => {
      const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
      // A non-active install answers 200 with its install status (INTERFACE §3).
      if (install.status !== 'active') {
        return { install_id: install.install_id, connector_id: install.connector_id, status: install.status };
      }
      // A read: resent to the next owner if its node dies mid-request (INTERFACE §8.24).
      return ctx.actors.ask(
        installWritesKey(install.install_id),
        { type: 'health', tenantId: req.tenantId },
        { timeoutMs: 15_000, idempotent: true },
      );
    },
  );
};
