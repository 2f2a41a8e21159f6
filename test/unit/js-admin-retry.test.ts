/**
 * Start-up JetStream requests while a NATS cluster elects (src/runtime/js-admin-retry.ts):
 * the answers of a settling cluster are retried with a warning per attempt, anything else
 * and the last settling answer past the budget are thrown as they are.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import { errors as natsErrors } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { isSettlingError, retryJsAdmin } from '../../src/runtime/js-admin-retry.js';
import { LOG_LEVEL, LogCapture } from '../support/log-capture.js';

const apiError = (err_code: number, description: string) => new JetStreamApiError({ code: 503, err_code, description });

describe('isSettlingError', () => {
  it('knows a timeout, no responders and "cluster not available", also as a cause', () => {
    expect(isSettlingError(new natsErrors.TimeoutError())).toBe(true);
    expect(
      isSettlingError(new Error('request failed', { cause: new natsErrors.NoRespondersError('$JS.API.INFO') })),
    ).toBe(true);
    expect(isSettlingError(apiError(10008, 'JetStream system temporarily unavailable'))).toBe(true);
  });

  it('leaves refusals and other failures alone', () => {
    expect(isSettlingError(apiError(10058, 'stream name already in use with a different configuration'))).toBe(false);
    expect(isSettlingError(new Error('permissions violation'))).toBe(false);
    expect(isSettlingError('timeout')).toBe(false);
  });
});

describe('retryJsAdmin', () => {
  it('retries settling answers, warning with the attempt count, until the request succeeds', async () => {
    const logs = new LogCapture();
    let calls = 0;
    const got = await retryJsAdmin(
      'stream X',
      async () => {
        if (++calls < 3) throw new natsErrors.TimeoutError();
        return 'created';
      },
      pino({ level: 'warn' }, logs.stream),
    );
    expect(got).toBe('created');
    expect(calls).toBe(3);
    expect(logs.find('JetStream not answering yet', LOG_LEVEL.warn).map((l) => l.attempt)).toEqual([1, 2]);
  });

  it('throws any other error at once', async () => {
    let calls = 0;
    const refusal = apiError(10074, 'insufficient resources');
    await expect(
      retryJsAdmin(
        'stream X',
        async () => {
          calls++;
          throw refusal;
        },
        pino({ level: 'silent' }),
      ),
    ).rejects.toBe(refusal);
    expect(calls).toBe(1);
  });

  it('gives up with the last settling error once the budget is spent', async () => {
    let calls = 0;
    await expect(
      retryJsAdmin(
        'stream X',
        async () => {
          calls++;
          throw new natsErrors.TimeoutError();
        },
        pino({ level: 'silent' }),
        1_400,
      ),
    ).rejects.toBeInstanceOf(natsErrors.TimeoutError);
    // Pauses of at most 250 and 500 ms (full jitter) fit in 1.4 s, so at least three tries ran.
    expect(calls).toBeGreaterThanOrEqual(3);
  });
});
