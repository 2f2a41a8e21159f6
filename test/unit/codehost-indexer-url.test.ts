/** unit: the indexer daemon URL template (spec §4.4, INTERFACE §6): accept/refuse table. */
import { describe, expect, it } from 'vitest';
import { checkTemplate, daemonUrl } from '../../src/connectors/codehost/indexer/daemon-url.js';

const INSTALL = '0f8fad5b-d9cb-469f-a165-70867728950e';
const REPO = 123456789;

const accept: Array<[string, string]> = [
  ['http://idx.internal/{install}/{repo}', `http://idx.internal/${INSTALL}/${REPO}`],
  [
    'https://idx.internal:8443/daemons/{install}/{repo}/rpc',
    `https://idx.internal:8443/daemons/${INSTALL}/${REPO}/rpc`,
  ],
  ['http://{install}.{repo}.idx.svc.cluster.local:7000/', `http://${INSTALL}.${REPO}.idx.svc.cluster.local:7000/`],
  ['http://r{repo}.idx.internal/{install}', `http://r${REPO}.idx.internal/${INSTALL}`],
  ['http://{install}.idx.internal/repos/{repo}', `http://${INSTALL}.idx.internal/repos/${REPO}`],
  ['http://idx-{install}.internal/rpc-{repo}', `http://idx-${INSTALL}.internal/rpc-${REPO}`],
  ['http://127.0.0.1:9000/{repo}/{install}', `http://127.0.0.1:9000/${REPO}/${INSTALL}`],
];

const refuse: Array<[string, RegExp]> = [
  ['http://idx.internal/{install}{repo}', /separate path segments/],
  ['http://idx.internal/{install}-{repo}/rpc', /separate path segments/],
  ['http://{install}-{repo}.idx.internal/', /separate DNS labels/],
  ['http://{install}{repo}.idx.internal/', /separate DNS labels/],
  ['http://idx.internal/{install}?repo={repo}', /\{repo\} must be inside/],
  ['http://idx.internal/rpc#{install}/{repo}', /\{install\} must be inside/],
  ['http://{install}:{repo}@idx.internal/', /must be inside/],
  ['http://idx.internal/{install}', /\{repo\} must appear exactly once/],
  ['http://idx.internal/{install}/{repo}/{repo}', /\{repo\} must appear exactly once/],
  ['ftp://idx.internal/{install}/{repo}', /http\(s\)/],
  ['/{install}/{repo}', /not an absolute URL/],
  // 36 + 28 = 64 characters in one label.
  ['http://{install}-indexer-daemon-long-name-xy.{repo}.internal/', /longer than 63/],
];

describe('unit: indexer daemon URL template', () => {
  for (const [template, url] of accept) {
    it(`accepts ${template}`, () => {
      expect(checkTemplate(template)).toEqual({ ok: true });
      expect(daemonUrl(template, INSTALL, REPO)).toEqual({ ok: true, url });
    });
  }

  for (const [template, reason] of refuse) {
    it(`refuses ${template}`, () => {
      const r = daemonUrl(template, INSTALL, REPO);
      expect(r.ok).toBe(false);
      expect(r.ok === false && r.reason).toMatch(reason);
    });
  }

  it('a label of exactly 63 characters is accepted, 64 refused', () => {
    const ok = `http://{install}-${'a'.repeat(63 - 37)}.{repo}.internal/`;
    expect(daemonUrl(ok, INSTALL, REPO).ok).toBe(true);
    const long = `http://{install}-${'a'.repeat(64 - 37)}.{repo}.internal/`;
    expect(daemonUrl(long, INSTALL, REPO).ok).toBe(false);
  });

  it('the label length depends on the repo id: a long id can push a label over 63', () => {
    const t = `http://r{repo}-${'b'.repeat(50)}.idx/{install}`;
    expect(daemonUrl(t, INSTALL, 12).ok).toBe(true);
    expect(daemonUrl(t, INSTALL, 1234567890123).ok).toBe(false);
  });

  it('validates ids before substituting them', () => {
    const t = 'http://idx.internal/{install}/{repo}';
    for (const bad of ['../../admin', INSTALL.toUpperCase(), `${INSTALL}/x`, '', 'not-a-uuid']) {
      expect(daemonUrl(t, bad, REPO)).toMatchObject({ ok: false, reason: expect.stringMatching(/install id/) });
    }
    for (const bad of ['0', '-1', '1.5', '12/../x', '1e3', '99999999999999999', ' 1']) {
      expect(daemonUrl(t, INSTALL, bad)).toMatchObject({ ok: false, reason: expect.stringMatching(/repo id/) });
    }
  });
});
