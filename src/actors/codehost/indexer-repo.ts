/**
 * The indexer session's view of its repo (spec §8, INTERFACE §6): whether the install is
 * still an active code-host install, where the repo is, its admission under the tenant's
 * repo cap (`repo-index-state.ts`), and its daemon URL from the operator's template.
 */
import { daemonUrl } from '../../connectors/codehost/indexer/daemon-url.js';
import { getListedRepo } from '../../store/backfill-repos.js';
import { getInstallById, type Install } from '../../store/installs.js';
import { admitRepo, type RepoIndexState } from '../../store/repo-index-state.js';
import type { IndexerSessionPorts } from './indexer-ports.js';
import type { RepoHint } from './indexer-protocol.js';

export function indexerRepos(ports: Pick<IndexerSessionPorts, 'pool' | 'repoCap' | 'template'>) {
  return {
    async activeInstall(installId: string): Promise<Install | null> {
      const install = await getInstallById(ports.pool, installId);
      return install && install.connector_id === 'codehost' && install.status === 'active' ? install : null;
    },

    /** Where the repo is: the caller's hint (a webhook payload), the session's row, or the backfill's registry. */
    async repoOf(
      installId: string,
      repoId: number,
      hint: RepoHint | undefined,
      row: RepoIndexState | null,
    ): Promise<RepoHint | null> {
      if (hint && typeof hint.full_name === 'string' && typeof hint.clone_url === 'string') return hint;
      if (row) return { full_name: row.repo_full_name, clone_url: row.clone_url };
      const listed = await getListedRepo(ports.pool, installId, repoId);
      return listed ? { full_name: listed.full_name, clone_url: listed.clone_url } : null;
    },

    admit(install: Install, repoId: number, repo: RepoHint) {
      return admitRepo(ports.pool, {
        installId: install.install_id,
        tenantId: install.tenant_id,
        repoId,
        repoFullName: repo.full_name,
        cloneUrl: repo.clone_url,
        cap: ports.repoCap,
      });
    },

    urlFor(installId: string, repoId: number) {
      return ports.template === null
        ? ({ ok: false, reason: 'SERVICE_INDEXER_DAEMON_URL_TEMPLATE is not set' } as const)
        : daemonUrl(ports.template, installId, repoId);
    },
  };
}
