/** Unit: classification of GitHub's failures (STYLE.md; GitHub's rate-limit rules). */
import { describe, expect, it } from 'vitest';
import { isRetryable, RateLimited, UpstreamError } from '../../src/errors.js';
import { MIN_RATE_LIMIT_WAIT_S, toUpstreamError } from '../../src/connectors/codehost/upstream-error.js';

/** Octokit's RequestError, as far as the classifier reads it. */
function httpError(status: number, message: string, headers: Record<string, string> = {}) {
  return Object.assign(new Error(`${message} - https://docs.github.com/rest`), {
    name: 'HttpError',
    status,
    response: { status, headers, data: { message } },
  });
}
const NOW = 1_700_000_000_000;

describe('toUpstreamError', () => {
  it('429 and 403 with retry-after are rate limits that honour it', () => {
    for (const status of [429, 403]) {
      const e = toUpstreamError(
        httpError(status, 'You have exceeded a secondary rate limit', { 'retry-after': '42' }),
        'write',
        NOW,
      );
      expect(e).toBeInstanceOf(RateLimited);
      expect(e.retryAfterS).toBe(42);
      expect(e.code).toBe('rate_limited');
    }
  });

  it('a secondary limit without retry-after waits at least 60 s; a primary one until its reset', () => {
    expect(toUpstreamError(httpError(403, 'You have exceeded a secondary rate limit'), 'w', NOW).retryAfterS).toBe(
      MIN_RATE_LIMIT_WAIT_S,
    );
    expect(toUpstreamError(httpError(429, 'slow down'), 'w', NOW).retryAfterS).toBe(MIN_RATE_LIMIT_WAIT_S);
    const reset = String(NOW / 1000 + 600);
    expect(
      toUpstreamError(
        httpError(403, 'API rate limit exceeded', { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset }),
        'w',
        NOW,
      ).retryAfterS,
    ).toBe(600);
    const soon = String(NOW / 1000 + 5);
    expect(
      toUpstreamError(
        httpError(403, 'API rate limit exceeded', { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': soon }),
        'w',
        NOW,
      ).retryAfterS,
    ).toBe(60);
  });

  it('other refusals are upstream errors carrying GitHub’s message and status; they are terminal', () => {
    const e = toUpstreamError(httpError(403, 'Resource not accessible by integration'), 'create comment', NOW);
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e.message).toContain('Resource not accessible by integration');
    expect(e.details).toEqual({ upstream_status: 403 });
    expect(isRetryable(e)).toBe(false);
    expect(isRetryable(toUpstreamError(httpError(422, 'Validation Failed'), 'w', NOW))).toBe(false);
  });

  it('5xx and unreachable are upstream errors worth retrying', () => {
    const five = toUpstreamError(httpError(502, 'Bad Gateway'), 'w', NOW);
    expect(five).toBeInstanceOf(UpstreamError);
    expect(isRetryable(five)).toBe(true);
    const down = toUpstreamError(
      Object.assign(new Error('fetch failed'), { name: 'HttpError', status: 500 }),
      'w',
      NOW,
    );
    expect(down.message).toContain('unreachable');
    expect(down.details).toEqual({ upstream_status: null });
    expect(isRetryable(down)).toBe(true);
    expect(isRetryable(toUpstreamError(httpError(429, 'x'), 'w', NOW))).toBe(true);
  });
});
