/**
 * Code-host health (spec §4.5; INTERFACE §3, §8.1, §8.13): `skeleton` while the connector
 * is off; otherwise a round trip as the App (`GET /app`, `GET /app/installations/{id}`:
 * it proves the installation on every call) and a valid installation token, the cached one
 * while it has time left, else a fresh mint. Any failure is 503 `unavailable` carrying
 * GitHub's message (an installation gone upstream, a suspended one, a wrong key).
 */
import { Unavailable } from '../../errors.js';
import type { DriverContext, HealthReport } from '../driver.js';
import { installRefOf, type GithubClients } from './github-client.js';
import { describeUpstream } from './upstream-error.js';

export async function checkHealth(clients: GithubClients | null, ctx: DriverContext): Promise<HealthReport> {
  if (clients === null) return { status: 'skeleton' };
  const ref = installRefOf(ctx.install);
  const request = { signal: ctx.signal };
  const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      const f = describeUpstream(err);
      throw new Unavailable(`${what} failed: ${f.message}`, { details: { upstream_status: f.status }, cause: err });
    }
  };
  const app = clients.forApp();
  await step('GET /app', () => app.request('GET /app', { request }));
  const { data } = await step('GET /app/installations/{id}', () =>
    app.rest.apps.getInstallation({ installation_id: ref.githubInstallationId, request }),
  );
  // A suspended installation still reads; its token mint would be refused, so say so even
  // while a cached token is valid.
  if (data.suspended_at) {
    throw new Unavailable('the GitHub installation is suspended: This installation has been suspended', {
      details: { upstream_status: 403, suspended_at: data.suspended_at },
    });
  }
  // spec §4.5: a token that cannot be minted is a 503. A cached one with time left is
  // reused (health probes must not mint a token each); an expiring one is replaced.
  await step('minting an installation token', () => clients.installationToken(ref));
  return {
    status: 'healthy',
    github_installation_id: ref.githubInstallationId,
    account_login: data.account && 'login' in data.account ? data.account.login : null,
  };
}
