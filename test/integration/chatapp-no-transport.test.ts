/**
 * A chat connector with neither a signing secret nor Socket Mode installs and backfills,
 * then would never hear a live event: the node says so at start, naming the settings, and
 * the connector listing shows `inbound_transport: "none"` (INTERFACE §3 listing, extra field).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { EVENTS_PATH } from '../../src/edge/routes/chatapp/events.js';
import { chatEnv, json } from '../support/slack-harness.js';
import { FakeSlack } from 'connector-service/testing';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';
import { startTestNode, type TestNode } from '../support/node.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('chat connector without an inbound transport', () => {
  it('warns at start naming the settings and lists inbound_transport none; with a signing secret, neither', async () => {
    const slack = await new FakeSlack().start();
    cleanups.push(() => slack.close());
    const { CHATAPP_SIGNING_SECRET: _secret, ...noTransport } = chatEnv(slack);

    const logs = new LogCapture();
    const bare: TestNode = await startTestNode(noTransport, undefined, { logs });
    cleanups.push(() => bare.stop());
    const warned = logs.find('no inbound transport', LOG_LEVEL.warn);
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toContain('CHATAPP_SIGNING_SECRET');
    const t = await bare.tenant();
    const listed = await json(await fetch(`${bare.url}/api/v1/connectors`, { headers: t.auth }));
    expect(listed.connectors[0]).toMatchObject({ connector_id: 'chatapp', enabled: true, inbound_transport: 'none' });
    expect((await fetch(`${bare.url}${EVENTS_PATH}`, { method: 'POST' })).status).toBe(404);

    const okLogs = new LogCapture();
    const wired = await startTestNode(chatEnv(slack), undefined, { logs: okLogs });
    cleanups.push(() => wired.stop());
    expect(okLogs.find('no inbound transport', LOG_LEVEL.warn)).toHaveLength(0);
    const t2 = await wired.tenant();
    const listed2 = await json(await fetch(`${wired.url}/api/v1/connectors`, { headers: t2.auth }));
    expect(listed2.connectors[0]).toMatchObject({ inbound_transport: 'http' });
  });
});
