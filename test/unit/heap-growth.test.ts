/** SERVICE_HEAP_GROWING_PERCENT: the setting and when it is applied (src/node/heap-growth.ts). */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DEFAULT_HEAP_GROWING_PERCENT } from '../../src/config-defaults.js';
import { LARGE_HEAP_LIMIT_BYTES, limitHeapGrowth } from '../../src/node/heap-growth.js';
import { TEST_MASTER_KEY } from '../support/env.js';

const base = { SERVICE_MASTER_KEY: TEST_MASTER_KEY };

describe('SERVICE_HEAP_GROWING_PERCENT', () => {
  it('defaults to twice the live set and takes 0 (V8 decides) up to 1000', () => {
    expect(loadConfig(base).heapGrowingPercent).toBe(DEFAULT_HEAP_GROWING_PERCENT);
    expect(DEFAULT_HEAP_GROWING_PERCENT).toBe(100);
    expect(loadConfig({ ...base, SERVICE_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(loadConfig({ ...base, SERVICE_HEAP_GROWING_PERCENT: '250' }).heapGrowingPercent).toBe(250);
  });

  it.each(['-1', '5', '1001', '1.5', 'lots'])('refuses %j naming the setting', (v) => {
    let caught: unknown;
    try {
      loadConfig({ ...base, SERVICE_HEAP_GROWING_PERCENT: v });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).setting).toBe('SERVICE_HEAP_GROWING_PERCENT');
  });
});

describe('limitHeapGrowth', () => {
  const large = LARGE_HEAP_LIMIT_BYTES;

  it('leaves V8 alone at 0, when node was given the flag itself, and on a heap below 2 GiB', () => {
    expect(limitHeapGrowth(0, { execArgv: [], heapLimitBytes: large })).toBeNull();
    expect(limitHeapGrowth(100, { execArgv: ['--heap-growing-percent=300'], heapLimitBytes: large })).toBeNull();
    expect(limitHeapGrowth(100, { execArgv: ['--heap_growing_percent', '300'], heapLimitBytes: large })).toBeNull();
    // A 512 MiB container: V8's own factor is at most about 1.3 there, below 2.
    expect(limitHeapGrowth(100, { execArgv: [], heapLimitBytes: 256 * 1024 ** 2 })).toBeNull();
  });

  it('sets the flag otherwise', () => {
    expect(limitHeapGrowth(100, { execArgv: ['--enable-source-maps'], heapLimitBytes: large })).toBe(100);
  });
});
