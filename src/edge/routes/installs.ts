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
import { ownInstall, parseOrBadRequest } from '../params.js';

const ListQuery = z.object({ connector_id: z.enum(CONNECTOR_IDS).optional() }).strict();
const EmitBody = z.object({ kind: z.string().min(1).max(100), body: z.record(z.string(), z.unknown()) }).strict();

/** Emits wait up to 10 s for a workspace token (INTERFACE §3), plus the upstream call. */
const EMIT_TIMEOUT_MS = 25_000;

export const installRoutes: FastifyPluginAsync<EdgeContext> = async (app, ctx) => {
  app.get('/connectors/installs', async (req) => {
    const q = parseOrBadRequest(ListQuery, req.query, 'query');
    return { installs: await listInstalls(ctx.db, req.tenantId, q.connector_id) };
  });

  app.get<{ Params: { installId: string } }>('/connectors/installs/:installId', async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    // INTERFACE §9.4: failing side effects are visible per install.
    return { ...install, effects: await summarizeEffects(ctx.db, install.install_id) };
  });

  app.delete<{ Params: { installId: string } }>('/connectors/installs/:installId', async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    // Idempotent: deleting an uninstalled install answers the same 200.
    if (install.status === 'uninstalled') return { install_id: install.install_id, status: 'uninstalled' };
    return ctx.actors.ask(
      installKey(install.install_id),
      { type: 'uninstall', tenantId: req.tenantId },
      { timeoutMs: 20_000 },
    );
  });

  app.post<{ Params: { installId: string } }>('/connectors/installs/:installId/emit', async (req) => {
    const install = await ownInstall(ctx.db, req.tenantId, req.params.installId);
    // INTERFACE §3: an invalid kind or body is `bad_config` (JSON that does not parse stays `bad_request`).
    const parsed = EmitBody.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new BadConfig(`body: ${issue.path.length ? issue.path.join('.') : 'body'}: ${issue.message}`);
    }
    const body = parsed.data;
    return ctx.actors.ask(
      installWritesKey(install.install_id),
      { type: 'emit', tenantId: req.tenantId, kind: body.kind, body: body.body },
      { timeoutMs: EMIT_TIMEOUT_MS },
    );
  });

  app.get<{ Params: { installId: string } }>('/connectors/installs/:installId/health', async (req) => {
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
  });
};
