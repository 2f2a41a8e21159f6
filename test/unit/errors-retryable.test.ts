/** Unit: the one retry-or-give-up rule and the error-code catalogue (errors.ts). */
import { describe, expect, it } from 'vitest';
import {
  ActorOverloaded,
  ActorUnavailable,
  BadConfig,
  Conflict,
  DeadlineExceeded,
  ErrorCodes,
  Internal,
  isRetryable,
  NotFound,
  RateLimited,
  Unavailable,
  UpstreamError,
} from '../../src/errors.js';
import { fromWire, saysNothingAboutInput, toWire } from '../../src/errors-wire.js';
import { toSlackAppError } from '../../src/connectors/chatapp/slack-errors.js';

/** What @slack/web-api throws for an `ok: false` answer. */
const platformFailure = (error: string) =>
  Object.assign(new Error(`An API error occurred: ${error}`), {
    code: 'slack_webapi_platform_error',
    data: { ok: false, error },
  });

const upstream = (status: number | null) =>
  new UpstreamError('upstream said no', { details: { upstream_status: status } });

describe('isRetryable', () => {
  it('an upstream 4xx is terminal, except 408 and 429', () => {
    for (const s of [400, 401, 403, 404, 410, 422]) expect(isRetryable(upstream(s)), String(s)).toBe(false);
    for (const s of [408, 429]) expect(isRetryable(upstream(s)), String(s)).toBe(true);
  });

  it('an upstream 5xx, an unreachable upstream and one without a status are retryable', () => {
    for (const s of [500, 502, 503, 504]) expect(isRetryable(upstream(s))).toBe(true);
    expect(isRetryable(upstream(null))).toBe(true);
    expect(isRetryable(new UpstreamError('Slack refused chat.postMessage: fatal_error'))).toBe(true);
  });

  it("a platform's refusal in an answer (Slack's ok:false) is terminal, its own failures are not", () => {
    const slack = (code: string) => toSlackAppError(platformFailure(code), 'chat.postMessage');
    for (const code of ['channel_not_found', 'invalid_arguments', 'not_in_channel', 'invalid_auth'])
      expect(isRetryable(slack(code)), code).toBe(false);
    for (const code of ['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout'])
      expect(isRetryable(slack(code)), code).toBe(true);
    expect(isRetryable(new UpstreamError('x', { details: { upstream_error: 'channel_not_found' } }))).toBe(false);
  });

  it('our own refusals and classified defects are terminal; waits and unavailability are not', () => {
    for (const e of [new NotFound(), new BadConfig('x'), new Conflict('x', { code: ErrorCodes.installNotActive })])
      expect(isRetryable(e), e.code).toBe(false);
    expect(isRetryable(new Internal())).toBe(false);
    for (const e of [
      new RateLimited('x', 3),
      new Unavailable('x'),
      new ActorUnavailable('x'),
      new DeadlineExceeded('x'),
    ])
      expect(isRetryable(e), e.kind).toBe(true);
  });

  it('a throw nobody classified is retryable', () => {
    expect(isRetryable(new Error('Connection terminated unexpectedly'))).toBe(true);
  });

  it('the getter and the function agree, also after a trip over the wire', () => {
    const e = upstream(403);
    expect(e.retryable).toBe(false);
    const back = fromWire(toWire(e));
    expect(back.retryable).toBe(false);
    expect(fromWire(toWire(upstream(502))).retryable).toBe(true);
  });
});

describe('error codes', () => {
  it('a specific code crosses the wire; one this build does not know falls back to the kind', () => {
    const e = new Conflict('gone', { code: ErrorCodes.installNotActive });
    expect(fromWire(toWire(e)).code).toBe('install_not_active');
    expect(fromWire({ kind: 'Conflict', code: 'from_a_newer_node', message: 'x' }).code).toBe('conflict');
  });

  it('codes are snake_case and unique (INTERFACE §2)', () => {
    const codes = Object.values(ErrorCodes);
    for (const c of codes) expect(c).toMatch(/^[a-z]+(_[a-z]+)*$/);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

describe('saysNothingAboutInput', () => {
  it('is true for the path failing (a backing service, the actor), false for a deadline or any other throw', () => {
    const errno = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });
    for (const err of [
      new Unavailable('Postgres did not answer'),
      new ActorUnavailable('actor crashed, retry'),
      new ActorOverloaded('mailbox full'),
      errno('ECONNREFUSED'),
      errno('57P01'),
      new Error('Connection terminated unexpectedly'),
    ])
      expect(saysNothingAboutInput(err), String(err)).toBe(true);
    for (const err of [
      new DeadlineExceeded('deadline passed while handling ingest'),
      new Internal(),
      new Conflict('duplicate'),
      new Error('value too long for type character varying(64)'),
      errno('22P02'),
      'not an error',
    ])
      expect(saysNothingAboutInput(err), String(err)).toBe(false);
  });
});
