/**
 * Integration, INTERFACE §9.4: `installation` `suspend` makes the installation's installs
 * `suspended` (ingest stops, emits 409 `install_not_active`, health 200 with the status);
 * `unsuspend` makes the same installs `active` again, with the same install id and no
 * second backfill.
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
let t: Awaited<ReturnType<CodehostHarness['tenant']>>;
let installId: string;
const P = 7_700_000 + Math.floor(Math.random() * 1000);

beforeAll(async () => {
  h = await startCodehostHarness();
  t = await h.tenant('suspend');
  installId = await h.install(t, P);
});
afterAll(() => h?.stop());

const record = async () =>
  (await (await h.api(`/api/v1/connectors/installs/${installId}`, t)).json()) as {
    install_id: string;
    status: string;
    backfill: { state: string };
  };
const emit = () =>
  h.api(`/api/v1/connectors/installs/${installId}/emit`, t, {
    body: {
      kind: 'codehost.label',
      body: { repo_full_name: 'Codertocat/Hello-World', issue_number: 1, labels: ['x'] },
    },
  });
const lifecycle = (action: 'suspend' | 'unsuspend') => {
  const p = forInstallation(examplePayload('installation', 'deleted'), P) as Record<string, unknown>;
  return h.deliver('installation', { ...p, action });
};

describe('installation suspend / unsuspend', () => {
  it('suspends the install and brings the same install back, without a second backfill', async () => {
    await until('the install backfill settled', async () => (await record()).backfill.state !== 'pending');
    const listings = () => h.gh.callsTo('GET', /^\/installation\/repositories$/).length;
    await until('the backfill finished', async () => ['complete', 'failed'].includes((await record()).backfill.state), {
      timeoutMs: 20_000,
    });
    const listingsBefore = listings();

    expect((await lifecycle('suspend')).status).toBe(202);
    expect((await record()).status).toBe('suspended');
    const health = await h.api(`/api/v1/connectors/installs/${installId}/health`, t);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ install_id: installId, status: 'suspended' });
    const refused = await emit();
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('install_not_active');
    const whileSuspended = `while-suspended-${P}`;
    expect(
      (await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), P), { delivery: whileSuspended }))
        .status,
    ).toBe(202);

    const resumed = `unsuspend-${P}`;
    const p = forInstallation(examplePayload('installation', 'deleted'), P) as Record<string, unknown>;
    expect((await h.deliver('installation', { ...p, action: 'unsuspend' }, { delivery: resumed })).status).toBe(202);
    const back = await record();
    expect(back).toMatchObject({ install_id: installId, status: 'active' });
    const installs = (await (await h.api('/api/v1/connectors/installs?connector_id=codehost', t)).json()) as {
      installs: Array<{ install_id: string }>;
    };
    expect(installs.installs.map((i) => i.install_id)).toEqual([installId]);

    const after = `after-${P}`;
    expect(
      (await h.deliver('issues', forInstallation(examplePayload('issues', 'opened'), P), { delivery: after })).status,
    ).toBe(202);
    await until('events after the unsuspend stored', async () => {
      const ids = await h.eventIds(t, installId);
      return ids.includes(after) && ids.includes(resumed);
    });
    expect(await h.eventIds(t, installId)).not.toContain(whileSuspended);
    expect((await emit()).status).toBe(200);
    expect(listings()).toBe(listingsBefore);
    expect((await lifecycle('suspend')).status).toBe(202);
    expect((await record()).status).toBe('suspended');
  }, 60_000);
});
