/**
 * The graph's write-back to the code host end to end, against the fake GitHub
 * (src/testing): admin install → a signed `pull_request.opened` webhook (GitHub's recorded
 * payload) → ingest → projection → node actions (INTERFACE §3) → install actor → the
 * code-host driver → Octokit → the fake, which checks the installation token as GitHub does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examplePayload,
  forInstallation,
  startCodehostHarness,
  type CodehostHarness,
} from '../support/github-harness.js';
import { until } from '../support/until.js';

let h: CodehostHarness;
beforeAll(async () => {
  h = await startCodehostHarness();
});
afterAll(() => h?.stop());

interface ApiNode {
  id: string;
  kind: string;
  external_id: string;
  props: Record<string, unknown>;
}

describe('node actions reach the code host', () => {
  it('comments on and labels the pull request a webhook brought into the graph', async () => {
    const installationId = 700_000 + Math.floor(Math.random() * 99_999);
    const t = await h.tenant('graph-act');
    const installId = await h.install(t, installationId);
    const delivered = await h.deliver(
      'pull_request',
      forInstallation(examplePayload('pull_request', 'opened'), installationId),
    );
    expect(delivered.status).toBe(202);

    const pr = await until('the PR node', async () => {
      const res = await h.api('/api/v1/graph/nodes?kind=codehost.pull_request', t);
      return ((await res.json()) as { nodes: ApiNode[] }).nodes.find(
        (n) => n.external_id === 'Codertocat/Hello-World#2',
      );
    });

    const reply = await h.api(`/api/v1/graph/nodes/${pr.id}/actions`, t, {
      body: { action: 'reply', text: 'Looks good to me' },
    });
    const receipt = (await reply.json()) as { provider_id: string };
    expect(reply.status, JSON.stringify(receipt)).toBe(200);
    expect(receipt).toMatchObject({ kind: 'codehost.issue_comment', install_id: installId });
    expect(h.gh.repos.comments.get(Number(receipt.provider_id))).toMatchObject({
      repo: 'Codertocat/Hello-World',
      issue_number: 2,
      body: 'Looks good to me',
    });

    const label = await h.api(`/api/v1/graph/nodes/${pr.id}/actions`, t, {
      body: { action: 'label', labels: ['needs-review'] },
    });
    expect(label.status).toBe(200);
    expect(await label.json()).toMatchObject({ kind: 'codehost.label', provider_id: 'Codertocat/Hello-World#2' });
    expect(h.gh.repos.labels.get('Codertocat/Hello-World#2')).toEqual(['needs-review']);

    // Uninstalled: the node stays, marked, and acting on it is refused as for the install.
    expect((await h.api(`/api/v1/connectors/installs/${installId}`, t, { method: 'DELETE' })).status).toBe(200);
    const stale = (await (await h.api(`/api/v1/graph/nodes/${pr.id}`, t)).json()) as ApiNode & {
      source_status: string;
    };
    expect(stale.source_status).toBe('uninstalled');
    const refused = await h.api(`/api/v1/graph/nodes/${pr.id}/actions`, t, {
      body: { action: 'reply', text: 'anyone?' },
    });
    expect(refused.status).toBe(409);

    // Reinstalled: the node, not rewritten since, acts through the tenant's new install.
    const again = await h.install(t, installationId);
    expect(again).not.toBe(installId);
    const reply2 = await h.api(`/api/v1/graph/nodes/${pr.id}/actions`, t, {
      body: { action: 'reply', text: 'back again' },
    });
    const receipt2 = (await reply2.json()) as { provider_id: string; install_id: string };
    expect(reply2.status, JSON.stringify(receipt2)).toBe(200);
    expect(receipt2.install_id).toBe(again);
    expect(h.gh.repos.comments.get(Number(receipt2.provider_id))).toMatchObject({
      repo: 'Codertocat/Hello-World',
      issue_number: 2,
      body: 'back again',
    });
  });
});
