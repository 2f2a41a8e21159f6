/**
 * Integration, INTERFACE §8.24 and §9.4: emits through node churn. Three real nodes; a
 * client emits twice a second round-robin over 6 chat channels (each channel every 3 s),
 * retrying each emit for up to 15 s on any node; one node is killed with SIGKILL and
 * restarted, five times in a row. No emit may fail, and every `channel throttled` answer
 * must follow a post the channel really took within the second before (the client's own
 * retry of an earlier emit of that channel may have made one).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/db.js';
import { createTenant } from '../../src/store/tenants.js';
import { chatEnv, installOk, type ChatStack } from '../support/slack-harness.js';
import { FakeSlack } from 'connector-service/testing';
import { TEST_MASTER_KEY, freshNamespace, testDatabaseUrl, testNatsUrl } from '../support/env.js';
import { cleanNamespace } from '../support/node.js';
import { assertBuilt, kill9, killAll, startServeReady, type ServeProcess } from '../support/failover-cluster.js';

const RUNS = 5;
const RETRY_FOR_MS = 15_000;
const ATTEMPT_TIMEOUT_MS = 5_000;

describe('emits through node churn', () => {
  let slack: FakeSlack;
  let namespace: string;
  let pool: ReturnType<typeof createPool>;
  let env: Record<string, string>;
  const nodes: ServeProcess[] = [];

  beforeAll(async () => {
    assertBuilt();
    slack = await new FakeSlack().start();
    namespace = freshNamespace('churn');
    pool = createPool(testDatabaseUrl(), { max: 2 });
    env = {
      DATABASE_URL: testDatabaseUrl(),
      NATS_URL: testNatsUrl(),
      SERVICE_NAMESPACE: namespace,
      SERVICE_MASTER_KEY: TEST_MASTER_KEY,
      SERVICE_SHARDS: '12',
      SERVICE_LEASE_TTL_S: '3',
      LOG_LEVEL: 'warn',
      ...chatEnv(slack),
    };
  });
  afterAll(async () => {
    await killAll();
    await slack?.close();
    await pool?.end();
    if (namespace) await cleanNamespace(namespace);
  });

  it(
    'every emit succeeds and no throttle is spurious, across five kill -9 and restarts',
    { timeout: 300_000 },
    async () => {
      let seq = 0;
      const start = async () => {
        return startServeReady(`churn-${++seq}`, env, 30_000);
      };
      for (let i = 0; i < 3; i++) nodes.push(await start());
      const team = slack.addTeam();
      const channels = Array.from({ length: 6 }, () => slack.addChannel(team.id, { type: 'channel' }));
      const tenant = await createTenant(pool, TEST_MASTER_KEY, 'churn');
      const t = { ...tenant, auth: { authorization: `Bearer ${tenant.api_key}` } };
      const stack = { slack, node: { url: nodes[0]!.url } } as unknown as ChatStack;
      const { install_id: installId } = await installOk(stack, t, team.id);

      const live = () => nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
      const failures: string[] = [];
      const throttled: string[] = [];
      let slowestMs = 0;
      let spent = 0;
      let total = 0;
      const emitOnce = async (channelId: string, text: string) => {
        const started = Date.now();
        for (let attempt = 0; Date.now() - started < RETRY_FOR_MS; attempt++) {
          const nodesNow = live();
          const node = nodesNow[(attempt + text.length) % nodesNow.length]!;
          const res = await fetch(`${node.url}/api/v1/connectors/installs/${installId}/emit`, {
            method: 'POST',
            headers: { ...t.auth, 'content-type': 'application/json' },
            body: JSON.stringify({ kind: 'chatapp.message', body: { channel_id: channelId, text } }),
            signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
          }).catch(() => null);
          if (res?.status === 200) {
            slowestMs = Math.max(slowestMs, Date.now() - started);
            return;
          }
          if (res?.status === 429) {
            // A throttle is spurious unless the channel really took a post within the second
            // before (a retry of an earlier emit of this client may have, legitimately).
            const at = Date.now();
            const recent = slack.posted.some((p) => p.channel === channelId && p.at >= at - 1_500 && p.at <= at);
            if (!recent) throttled.push(`${text}: ${await res.text()}`);
            else spent++;
          }
          await sleep(250);
        }
        failures.push(text);
      };

      for (let run = 0; run < RUNS; run++) {
        const emits: Array<Promise<void>> = [];
        const killAt = 3_000;
        const runFor = 16_000;
        const began = Date.now();
        let victim: ServeProcess | null = null;
        for (let k = 0; Date.now() - began < runFor; k++) {
          if (victim === null && Date.now() - began >= killAt) {
            victim = live()[run % 3]!;
            await kill9(victim);
          }
          total++;
          emits.push(emitOnce(channels[k % channels.length]!.id, `run ${run} emit ${k}`));
          await sleep(500);
        }
        await Promise.all(emits);
        // The killed node comes back (a new process), so every run starts with three.
        nodes.splice(nodes.indexOf(victim!), 1);
        nodes.push(await start());
      }
      console.log(
        `figures: ${total} emits over ${RUNS} kill -9 runs: ${failures.length} failed, ` +
          `${throttled.length} spurious throttles (${spent} real ones), slowest success ${slowestMs} ms`,
      );
      expect(throttled).toEqual([]);
      expect(failures).toEqual([]);
    },
  );
});
