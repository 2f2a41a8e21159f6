/**
 * INTERFACE §9.3: the service's log lines for a request carry its `request_id`, also the
 * lines its actor writes: the id travels with the NATS request to whichever node owns the
 * install (here the same node, but over NATS all the same).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogCapture } from '../support/log-capture.js';
import { installOk, startChatStack, type ChatStack } from '../support/slack-harness.js';

const logs = new LogCapture();
let s: ChatStack;
beforeAll(async () => {
  s = await startChatStack({}, undefined, { logs });
});
afterAll(() => s?.stop());

describe('request ids across the actor boundary', () => {
  it("tags the install actor's log lines with the request's id", async () => {
    const t = await s.node.tenant();
    const team = s.slack.addTeam();
    const { install_id } = await installOk(s, t, team.id);
    // The bot token dies upstream: the uninstall's actor logs that it uninstalls locally.
    for (const token of s.slack.tokens.values()) if (token.teamId === team.id) token.revoked = true;
    const res = await fetch(`${s.node.url}/api/v1/connectors/installs/${install_id}`, {
      method: 'DELETE',
      headers: { ...t.auth, 'x-request-id': 'del-req-42' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('del-req-42');
    const line = logs.find('already dead upstream').at(-1);
    expect(line, JSON.stringify(logs.lines.slice(-10))).toBeDefined();
    expect(line!.request_id).toBe('del-req-42');
    expect(line!.actor).toBe(`install/${install_id}`);
  });
});
