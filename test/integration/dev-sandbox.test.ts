/**
 * `connectors dev --sandbox` (INTERFACE §9.1): the ready line names one active install of
 * each connector; within 60 s both have events from the seeded history; an emit and graph
 * actions against them succeed (on the service's own fakes); a second sandbox on the same
 * directory refuses and deletes nothing (issue 34); SIGTERM stops everything.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exited, runCli, startCli } from '../support/cli.js';
import { until } from '../support/until.js';

const dir = mkdtempSync(join(tmpdir(), 'connectors-sandbox-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function childrenOf(dataDir: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(dataDir) && !l.includes('ps -eo'));
}

describe('connectors dev --sandbox', () => {
  it('installs both connectors on the fakes, with history, emits and node actions working', async () => {
    const { child, first, stderr } = await startCli(
      ['dev', '--sandbox'],
      { SERVICE_DEV_DIR: dir, PORT: '0', SERVICE_SHARDS: '4' },
      180_000,
    );
    try {
      // A second sandbox on the same directory refuses in one line and deletes nothing of the first's.
      const second = await runCli(['dev', '--sandbox'], { SERVICE_DEV_DIR: dir, PORT: '0' }, 20_000);
      expect(second.code).not.toBe(0);
      expect(second.stderr).toMatch(/^connectors: another `connectors dev` \(pid \d+\) is running on [^\n]+\n$/);
      expect(existsSync(join(dir, 'sandbox', 'pg', 'PG_VERSION'))).toBe(true);

      const sandbox = first.sandbox as { chatapp_install_id: string; codehost_install_id: string };
      expect(sandbox).toEqual({ chatapp_install_id: expect.any(String), codehost_install_id: expect.any(String) });
      const url = first.url as string;
      const headers = { authorization: `Bearer ${first.api_key as string}`, 'content-type': 'application/json' };
      const get = async (path: string) => (await fetch(`${url}${path}`, { headers })).json() as Promise<any>;
      const post = (path: string, body: unknown) =>
        fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

      const installs = (await get('/api/v1/connectors/installs')).installs as Array<Record<string, unknown>>;
      expect(installs.map((i) => [i.connector_id, i.status]).sort()).toEqual([
        ['chatapp', 'active'],
        ['codehost', 'active'],
      ]);

      // Within 60 s both installs have events (INTERFACE §9.1), and the graph has their nodes.
      const eventsOf = async (id: string) => (await get(`/api/v1/connectors/installs/${id}/events`)).events as any[];
      const log = { everyMs: 500, explain: () => stderr().slice(-2000) };
      await until(
        'events of both installs',
        async () => {
          const [chat, code] = await Promise.all([
            eventsOf(sandbox.chatapp_install_id),
            eventsOf(sandbox.codehost_install_id),
          ]);
          return chat.length > 0 && code.length > 0;
        },
        { timeoutMs: 60_000, ...log },
      );
      const thread = await until(
        'the seeded release thread in the graph',
        async () => (await get('/api/v1/graph/nodes?kind=chat.message&q=release')).nodes[0],
        { timeoutMs: 30_000, ...log },
      );
      expect(thread.props.text).toContain('Release 1.4');
      const pr = await until(
        'a pull request node in the graph',
        async () => (await get('/api/v1/graph/nodes?kind=codehost.pull_request')).nodes[0],
        { timeoutMs: 30_000, ...log },
      );

      const emit = await post(`/api/v1/connectors/installs/${sandbox.chatapp_install_id}/emit`, {
        kind: 'chatapp.message',
        body: { channel_id: 'C0RANDOM', text: 'hello from the sandbox test' },
      });
      expect(emit.status, await emit.clone().text()).toBe(200);
      const reply = await post(`/api/v1/graph/nodes/${thread.id}/actions`, { action: 'reply', text: 'Ship it' });
      expect(reply.status, await reply.clone().text()).toBe(200);
      const comment = await post(`/api/v1/graph/nodes/${pr.id}/actions`, { action: 'reply', text: 'LGTM' });
      expect(comment.status, await comment.clone().text()).toBe(200);
      expect(((await comment.json()) as { kind: string }).kind).toBe('codehost.issue_comment');
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child, 60_000), stderr().slice(-2000)).toBe(0);
    }
    expect(childrenOf(dir)).toEqual([]);
  }, 300_000);
});
