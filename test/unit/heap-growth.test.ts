/** SERVICE_HEAP_GROWING_PERCENT: the setting and when it is applied (src/node/heap-growth.ts). */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DEFAULT_HEAP_GROWING_PERCENT, limitHeapGrowth } from '../../src/node/heap-growth.js';
import { TEST_MASTER_KEY } from '../support/env.js';

const base = { SERVICE_MASTER_KEY: TEST_MASTER_KEY };

describe('SERVICE_HEAP_GROWING_PERCENT', () => {
  it('defaults to twice the live set and takes 0 (V8 decides) up to 1000', () => {
    expect(loadConfig(base).heapGrowingPercent).toBe(DEFAULT_HEAP_GROWING_PERCENT);
    expect(DEFAULT_HEAP_GROWING_PERCENT).toBe(100);
    expect(loadConfig({ ...base, SERVICE_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(loadConfig({ ...base, SERVICE_HEAP_GROWING_PERCENT: '250' }).heapGrowingPercent).toBe(250);
  });

  it.each(['-1', '1001', '1.5', 'lots'])('refuses %j naming the setting', (v) => {
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
  it('leaves V8 alone at 0 and when node was given the flag itself', () => {
    expect(limitHeapGrowth(0, [])).toBeNull();
    expect(limitHeapGrowth(100, ['--heap-growing-percent=300'])).toBeNull();
    expect(limitHeapGrowth(100, ['--heap_growing_percent', '300'])).toBeNull();
  });

  it('sets the flag otherwise', () => {
    expect(limitHeapGrowth(100, ['--enable-source-maps'])).toBe(100);
  });
});
