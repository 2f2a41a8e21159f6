/**
 * `POST /api/v1/connectors/codehost/admin/install` (spec §4.3, §5; INTERFACE §3, §8.11,
 * §8.25). The gates run in the contract's order, the first four before the body is read:
 * endpoint switch 404 → admin auth unset 500 → admin token 401 → Bearer 401 → connector
 * off 501 → body 400 → user of the tenant 400 → token-mint proof 400/502 → 409.
 *
 * The mint proves the installation belongs to this App (spec §4.3 step 2); then one
 * transaction writes the install row, the App-installation row and the credentials (the
 * minted token, encrypted) — all or nothing.
 */
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import { z } from 'zod';
import type { Config } from '../../../config.js';
import { recordAuditOk } from '../../../store/audit-log.js';
import { AUDITED, auditStamp } from '../../audit.js';
import type { EdgeContext } from '../../context.js';
import { operation } from '../../operation.js';
import { validInput } from '../../params.js';
import {
  AdminNotConfigured,
  BadRequest,
  ErrorCodes,
  Internal,
  isRetryable,
  NotConfigured,
  NotFound,
  Unauthorized,
} from '../../../errors.js';
import type { Logger } from '../../../log.js';
import { putAppInstallation } from '../../../store/codehost-app-installations.js';
import type { CachedInstallationToken, CodehostSecret } from '../../../store/codehost-credentials.js';
import type { CredentialCipher } from '../../../store/credential-cipher.js';
import { putCredentials } from '../../../store/credentials.js';
import { withTx } from '../../../store/db.js';
import { createInstall, type Install } from '../../../store/installs.js';
import { userBelongsToTenant } from '../../../store/users.js';
import { adminTokenMatches } from './check-admin-token.js';
import type { GithubClients } from '../../../connectors/codehost/github-client.js';
import { describeUpstream, toUpstreamError, upstreamStatusOf } from '../../../connectors/codehost/upstream-error.js';

const ADMIN_INSTALL_PATH = '/api/v1/connectors/codehost/admin/install';

export interface AdminInstallDeps {
  config: Readonly<Config>;
  log: Logger;
  pool: pg.Pool;
  cipher: CredentialCipher;
  clients: GithubClients | null;
  /** Once the install committed (INTERFACE §3: "the PR-diff backfill starts"); wiring/codehost-walkers.ts. */
  startBackfill(install: Install): Promise<void>;
  /** Committed a new install: cached webhook fan-out lists must be looked up again. */
  installsChanged(): void;
}

// INTERFACE §8.11: all five fields are required. The enums are GitHub's own values.
const AdminInstallBody = z
  .object({
    user_id: z
      .string()
      .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: 'must be a UUID' }),
    github_installation_id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    account_type: z.enum(['Organization', 'User', 'Enterprise']),
    account_login: z.string().trim().min(1).max(100),
    repository_selection: z.enum(['all', 'selected']),
  })
  .strict();

const ADMIN_INSTALL_SCHEMA = operation({
  operationId: 'installCodehost',
  tag: 'codehost',
  summary: 'Install a GitHub App installation for the tenant (admin: X-Service-Admin-Token and Bearer)',
  description:
    'Gates in this order: admin endpoints off 404; SERVICE_ADMIN_API_TOKEN unset 500 `not_configured`; admin ' +
    'token 401; Bearer 401; connector off 501; body 400; `user_id` not of the tenant 400; the App cannot mint a ' +
    'token for the installation 400 `installation_not_accessible` (GitHub down: 502); already installed for ' +
    'the tenant 409 `already_installed`. The PR-diff backfill starts.',
  auth: 'admin',
  scope: 'installs:write',
  body: AdminInstallBody,
  responses: {
    201: {
      description: 'Installed',
      schema: z.object({
        install_id: z.uuid(),
        connector_id: z.literal('codehost'),
        status: z.literal('active'),
        github_installation_id: z.int(),
      }),
    },
  },
  errors: [
    'not_found',
    { kind: 'AdminNotConfigured', code: 'not_configured' },
    'not_configured',
    'installation_not_accessible',
    'upstream_error',
    'already_installed',
  ],
});

export function adminInstallRoutes(deps: AdminInstallDeps): FastifyPluginAsync<EdgeContext> {
  const { config, pool, cipher } = deps;
  const log = deps.log.child({ component: 'codehost-admin-install' });

  const mintProof = async (clients: GithubClients, installationId: number): Promise<CachedInstallationToken | null> => {
    try {
      return await clients.mintUnbound(installationId);
    } catch (err) {
      const e = toUpstreamError(err, 'minting an installation token');
      const status = upstreamStatusOf(e);
      if (isRetryable(e) || status === null) throw e;
      // 401/403/404 (and GitHub's other refusals): this App cannot act for that installation.
      throw new BadRequest(
        `the App cannot mint a token for installation ${installationId}: ${describeUpstream(err).message}`,
        {
          code: ErrorCodes.installationNotAccessible,
          details: { upstream_status: status },
        },
      );
    }
  };

  return async (app) => {
    app.post(
      ADMIN_INSTALL_PATH,
      {
        schema: ADMIN_INSTALL_SCHEMA,
        attachValidation: true,
        // INTERFACE §3's order: the admin gates, then the Bearer key (tenant-guard.ts, after
        // these), then the connector's own settings.
        config: { tenant: true, audit: AUDITED.install },
        onRequest: async (req) => {
          if (!config.admin.endpointsEnabled) throw new NotFound(`no route for POST ${ADMIN_INSTALL_PATH}`);
          if (config.admin.apiToken === null) throw new AdminNotConfigured();
          if (!adminTokenMatches(req.headers['x-service-admin-token'], config.admin.apiToken)) {
            throw new Unauthorized('missing or wrong X-Service-Admin-Token');
          }
        },
        // Before the body is read, as the gates above.
        preParsing: async (_req, _reply, payload) => {
          if (!config.codehost.enabled)
            throw new NotConfigured('the code-host connector is not enabled and fully configured');
          return payload;
        },
      },
      async (req, reply) => {
        const body = validInput<z.output<typeof AdminInstallBody>>(req, 'body');
        const tenantId = req.tenantId;
        if (!(await userBelongsToTenant(pool, tenantId, body.user_id)))
          throw new BadRequest('user_id is not a user of this tenant');
        const clients = deps.clients;
        const appId = config.codehost.appId;
        if (clients === null || appId === null)
          throw new NotConfigured('the code-host connector is not enabled and fully configured');
        const installationId = body.github_installation_id;
        const token = await mintProof(clients, installationId);

        const install = await withTx(pool, async (tx) => {
          // Conflict `already_installed` when this tenant already has it active (INTERFACE §3: 409).
          const created = await createInstall(tx, {
            tenantId,
            connectorId: 'codehost',
            externalId: String(installationId),
            displayName: body.account_login,
          });
          const written = await putAppInstallation(tx, {
            installId: created.install_id,
            tenantId,
            githubInstallationId: installationId,
            accountLogin: body.account_login,
            accountType: body.account_type,
            repositorySelection: body.repository_selection,
            appId,
          });
          if (!written) throw new Internal('the App-installation row was not written');
          const secret: CodehostSecret = { github_installation_id: installationId, app_id: appId, token };
          await putCredentials(tx, cipher, { tenantId, installId: created.install_id, secret: { ...secret } });
          // INTERFACE §10.5: the install and its audit entry commit together.
          await recordAuditOk(tx, tenantId, auditStamp(req, `install/${created.install_id}`));
          return created;
        });
        deps.installsChanged();
        log.info(
          { installId: install.install_id, tenantId, installationId, userId: body.user_id },
          'code-host install created',
        );
        await deps.startBackfill(install).catch((err: unknown) => {
          // The install stands; its backfill state says it has not started.
          log.error({ err, installId: install.install_id }, 'PR-diff backfill did not start');
        });
        return reply.code(201).send({
          install_id: install.install_id,
          connector_id: 'codehost',
          status: 'active',
          github_installation_id: installationId,
        });
      },
    );
  };
}
