/**
 * Unit: a Slack platform error met by a walker (backfill, catch-up, name lookups) is sorted
 * terminal or retryable by the one classifier (`toSlackAppError` + `isRetryable`), as emits
 * and effects are: Slack's own failures are retried, its refusals are not. Each call goes
 * through the real SDK client to a local server answering Slack's `ok: false`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callWalkMethod } from '../../src/connectors/chatapp/backfill-call.js';
import { initialCursor } from '../../src/connectors/chatapp/backfill-cursor.js';
import { applyOutcome, nextCall, pacingFor } from '../../src/connectors/chatapp/backfill-walk.js';
import { lookupName } from '../../src/connectors/chatapp/name-lookup.js';

const log = pino({ level: 'silent' });
let server: Server;
let apiUrl: string;
/** The `error` every method answers with next. */
let answer = 'internal_error';

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: false, error: answer }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const o = () => ({ apiUrl, log, token: 'xoxb-test', signal: new AbortController().signal });
const history = { method: 'conversations.history' as const, params: { channel: 'C1' } };

describe('Slack platform errors in the walkers', () => {
  it("Slack's own failures are transient, its refusals are refused, a dead token is its own kind", async () => {
    for (const code of ['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']) {
      answer = code;
      expect(await callWalkMethod(o(), history), code).toEqual({ ok: false, kind: 'transient', error: code });
      expect(await lookupName(o(), { type: 'user', id: 'U1' }), code).toEqual({
        ok: false,
        kind: 'transient',
        error: code,
      });
    }
    for (const code of ['invalid_arguments', 'channel_not_found', 'missing_scope']) {
      answer = code;
      expect(await callWalkMethod(o(), history), code).toEqual({ ok: false, kind: 'refused', error: code });
      expect(await lookupName(o(), { type: 'channel', id: 'C1' }), code).toEqual({
        ok: false,
        kind: 'refused',
        error: code,
      });
    }
    answer = 'token_revoked';
    expect(await callWalkMethod(o(), history)).toEqual({ ok: false, kind: 'dead_token', error: 'token_revoked' });
  });

  it('a refusal a retry cannot mend ends the walk at once with its cause; a transient one backs off', () => {
    const pacing = pacingFor('non_marketplace');
    const c = initialCursor('public_channel', false);
    const list = nextCall(c, pacing)!;
    const refused = applyOutcome(c, list, { ok: false, kind: 'refused', error: 'invalid_arguments' }, 0, pacing);
    expect(refused.ending).toEqual({ state: 'failed', reason: 'conversations.list: invalid_arguments' });
    const d = initialCursor('public_channel', false);
    const again = applyOutcome(
      d,
      nextCall(d, pacing)!,
      { ok: false, kind: 'transient', error: 'fatal_error' },
      0,
      pacing,
    );
    expect(again.ending).toBeNull();
    expect(d.failures).toBe(1);
  });
});
