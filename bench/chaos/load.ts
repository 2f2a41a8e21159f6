/**
 * Steady signed webhook load, sent by the fake GitHub itself (so its delivery log is
 * GitHub's): `issues.opened`, and every n-th (default tenth) an `issue_comment.created`
 * with a slash command, whose reply is a write back to GitHub. Each new delivery is tagged with the
 * scenario running when it was sent.
 */
import { examplePayload, forInstallation } from '../../test/support/github-harness.js';
import type { FakeGitHub } from '../../src/testing/github.js';

export interface Load {
  /** Guids of first deliveries, by scenario. */
  sent: Map<string, string[]>;
  scenario: string;
  stop(): Promise<void>;
}

/** `slashEvery`: every n-th delivery is a slash-command comment (0: none). */
export function startLoad(gh: FakeGitHub, installationIds: number[], ratePerS: number, slashEvery = 10): Load {
  const sent = new Map<string, string[]>();
  const inFlight = new Set<Promise<unknown>>();
  let n = 0;
  let stopped = false;
  const load: Load = {
    sent,
    scenario: 'warmup',
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.allSettled([...inFlight]);
    },
  };
  const send = () => {
    if (stopped) return;
    const i = n++;
    const installation = installationIds[i % installationIds.length]!;
    const slash = slashEvery > 0 && i % slashEvery === slashEvery - 1;
    const payload = slash
      ? forInstallation(examplePayload('issue_comment', 'created'), installation)
      : forInstallation(examplePayload('issues', 'opened'), installation);
    // A new comment each time (its own id), as a person typing the command again would be.
    if (slash) Object.assign(payload.comment as object, { id: 880_000_000 + i, body: '/service help' });
    const scenario = load.scenario;
    const p = gh.hooks.send(slash ? 'issue_comment' : 'issues', payload).then((d) => {
      const list = sent.get(scenario) ?? [];
      list.push(d.guid);
      sent.set(scenario, list);
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  const timer = setInterval(send, 1000 / ratePerS);
  return load;
}
