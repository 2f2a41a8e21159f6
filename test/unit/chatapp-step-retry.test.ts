/**
 * Unit: how the chat walkers try again after a failure (backoff.ts's policy, full jitter
 * drawn at the top here): the backfill walker's step (actors/chatapp/chat-backfill.ts) and
 * the name lookups (actors/chatapp/chat-names.ts), per method and per tick. Postgres and
 * Slack are stand-ins; the tickers record what they were armed with.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatBackfillActor } from '../../src/actors/chatapp/chat-backfill.js';
import { chatBackfillKey } from '../../src/actors/chatapp/chat-backfill-protocol.js';
import { chatNamesActor } from '../../src/actors/chatapp/chat-names.js';
import { chatNamesKey } from '../../src/actors/chatapp/chat-names-protocol.js';
import type { Config } from '../../src/config.js';
import type { BotCredentials, ChatSecret } from '../../src/connectors/chatapp/bot-token.js';
import { Conflict, ErrorCodes, Unavailable } from '../../src/errors.js';
import { actorContext, hydrateRecording } from '../support/actor-unit.js';

const INSTALL = '6f1c1d3e-8a4b-4c2d-9e0f-1a2b3c4d5e6f';
const top = () => 0.999_999;

/** Postgres as the walkers see it: down (a dropped connection), the install active, or no install. */
type Db = 'down' | 'active' | 'gone';
function pool(db: { now: Db }): pg.Pool {
  const at = new Date('2026-01-01T00:00:00Z');
  const row = {
    install_id: INSTALL,
    tenant_id: '0b7e2c1a-3d4f-4a5b-8c6d-7e8f9a0b1c2d',
    connector_id: 'chatapp',
    status: 'active',
    external_id: 'T1',
    display_name: null,
    created_at: at,
    updated_at: at,
    backfill_state: 'complete',
    backfill_progress: {},
    backfill_updated_at: at,
    catch_up_state: 'none',
    catch_up_pending_since: null,
    catch_up_since: null,
    catch_up_progress: {},
    catch_up_updated_at: null,
  };
  const query = async () => {
    if (db.now === 'down') throw new Error('Connection terminated unexpectedly');
    return { rows: db.now === 'active' ? [row] : [] };
  };
  return { query } as unknown as pg.Pool;
}

let slack: Server;
let apiUrl: string;
beforeAll(async () => {
  // Every Web API call fails as Slack does when it is down.
  slack = createServer((_req, res) => res.writeHead(503).end('upstream unavailable'));
  await new Promise<void>((r) => slack.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(slack.address() as AddressInfo).port}/api/`;
});
afterAll(() => new Promise<void>((r) => slack.close(() => r())));

const config = () =>
  ({ chatapp: { apiUrl, appTier: 'non_marketplace', backfillPacingDivisor: 1 } }) as unknown as Config;
const secret = { bot_token: 'xoxb-1' } as ChatSecret;
const live: BotCredentials = { get: async () => secret };
const noActor = { ask: async () => ({}) } as never;
const noKv = {
  get: async () => null,
  create: async () => 1,
  update: async () => 1,
  put: async () => 1,
  delete: async () => undefined,
};

describe('chat backfill walker', () => {
  it('tries a failed step again on the backoff, reset by a step that went through', async () => {
    const db = { now: 'down' as Db };
    const def = chatBackfillActor({
      config: config(),
      pool: pool(db),
      log: actorContext(chatBackfillKey(INSTALL), null).log,
      actors: noActor,
      cursors: noKv,
      publish: async () => null,
      credentials: live,
      random: top,
    });
    const { ticker, ctx } = await hydrateRecording(def, chatBackfillKey(INSTALL));
    const tick = () => def.handlers.tick(ctx, { type: 'tick' });
    for (let i = 0; i < 5; i++) await expect(tick()).rejects.toThrow('backfill step failed');
    // Ceilings 5, 10, 20, 40 s, then the 60 s cap.
    expect(ticker.armed).toEqual([4_999, 9_999, 19_999, 39_999, 59_999]);
    db.now = 'gone';
    expect(await tick()).toEqual({ stopped: 'install not active' });
    db.now = 'down';
    await expect(tick()).rejects.toThrow();
    expect(ticker.armed.at(-1)).toBe(4_999);
  });
});

describe('chat name lookups', () => {
  const start = async (db: { now: Db }, credentials: BotCredentials) => {
    let t = 1_000_000;
    const def = chatNamesActor({
      config: config(),
      pool: pool(db),
      log: actorContext(chatNamesKey(INSTALL), null).log,
      actors: noActor,
      publish: async () => null,
      credentials,
      now: () => t,
      random: top,
    });
    const { state, ticker, ctx } = await hydrateRecording(def, chatNamesKey(INSTALL));
    return {
      state,
      ticker,
      tick: () => def.handlers.tick(ctx, { type: 'tick' }),
      queue: (...ids: string[]) => {
        for (const id of ids) state.pending.set(`user:${id}`, { type: 'user', id, attempts: 0 });
      },
      now: () => t,
      later: (ms: number) => (t += ms),
    };
  };

  it('pauses a method that failed transiently on the backoff, however many ids fail', async () => {
    const n = await start({ now: 'active' }, live);
    n.queue('U1', 'U2', 'U3');
    const pauses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const at = n.now();
      expect(await n.tick()).toMatchObject({ ok: false });
      pauses.push(n.state.nextAt.user - at);
      n.later(n.state.nextAt.user - at);
    }
    // One failure after another of users.info, each id tried once: 30 s, 60 s, then the 2-minute cap.
    expect(pauses).toEqual([29_999, 59_999, 119_999]);
    expect([...n.state.pending.values()].map((p) => p.attempts)).toEqual([1, 1, 1]);
  });

  it('tries a tick that failed on our side again on the backoff, and not one that cannot succeed', async () => {
    const db = { now: 'down' as Db };
    const n = await start(db, live);
    n.queue('U1');
    for (let i = 0; i < 3; i++) {
      // Coded, so the kernel keeps the activation (its queue and its count) instead of crashing it.
      const err = await n.tick().then(
        () => expect.fail('the tick succeeded with Postgres down'),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Unavailable);
      expect((err as Unavailable).cause).toMatchObject({ message: expect.stringContaining('Connection terminated') });
    }
    expect(n.ticker.armed).toEqual([29_999, 59_999, 119_999]);
    expect(n.state.pending.size).toBe(1);

    const gone = new Conflict('the install has no live credentials', { code: ErrorCodes.installNotActive });
    const refused = await start({ now: 'active' }, { get: () => Promise.reject(gone) });
    refused.queue('U1');
    await expect(refused.tick()).rejects.toBe(gone);
    expect(refused.ticker.armed).toEqual([]);
  });
});
