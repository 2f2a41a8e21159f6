import { describe, expect, it } from 'vitest';
import { sanitizeJson, sanitizeText } from '../../src/store/sanitize.js';

describe('sanitizeText', () => {
  it('removes NUL', () => {
    expect(sanitizeText('a\u0000b\u0000')).toBe('ab');
  });

  it('replaces lone high and low surrogates with U+FFFD', () => {
    expect(sanitizeText('x\ud800y')).toBe('x\ufffdy');
    expect(sanitizeText('x\udc00y')).toBe('x\ufffdy');
    expect(sanitizeText('\ud83d')).toBe('\ufffd');
    expect(sanitizeText('\ude00\ud83d')).toBe('\ufffd\ufffd');
    // A high after a high: the first is lone, the second pairs with the low.
    expect(sanitizeText('\ud83d\ud83d\ude00')).toBe('\ufffd\ud83d\ude00');
  });

  it('keeps valid pairs and clean strings untouched', () => {
    const s = 'emoji 😀 and 𝄞, accents é, CJK 漢字';
    expect(sanitizeText(s)).toBe(s);
    expect(sanitizeText('')).toBe('');
  });

  it('is fast on a large string', () => {
    const big = 'a'.repeat(25 * 1024 * 1024) + '\u0000';
    const t = performance.now();
    expect(sanitizeText(big)).toHaveLength(25 * 1024 * 1024);
    expect(performance.now() - t).toBeLessThan(2000);
  });
});

describe('sanitizeJson', () => {
  it('cleans strings and keys at every level and returns a new value', () => {
    const input = { 'k\u0000ey': ['v\ud800', { inner: 'ok\u0000', n: 1, b: true, z: null }], plain: '😀' };
    const out = sanitizeJson(input);
    expect(out).toEqual({ key: ['v\ufffd', { inner: 'ok', n: 1, b: true, z: null }], plain: '😀' });
    expect(input['k\u0000ey'][0]).toBe('v\ud800');
    expect(out).not.toBe(input);
  });

  it('handles top-level scalars and arrays', () => {
    expect(sanitizeJson('a\u0000')).toBe('a');
    expect(sanitizeJson(42)).toBe(42);
    expect(sanitizeJson(null)).toBeNull();
    expect(sanitizeJson(['\udc00', ['\u0000'], []])).toEqual(['\ufffd', [''], []]);
  });

  it('converts toJSON values as JSON.stringify would', () => {
    const d = new Date('2024-01-02T03:04:05.000Z');
    expect(sanitizeJson({ d })).toEqual({ d: '2024-01-02T03:04:05.000Z' });
  });

  it('keeps a __proto__ key as data, not a prototype', () => {
    const out = sanitizeJson(JSON.parse('{"__proto__":{"polluted":true}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('survives 100 000 levels of nesting', () => {
    let deep: unknown = 'leaf\u0000';
    for (let i = 0; i < 100_000; i++) deep = i % 2 ? { ['k\u0000']: deep } : [deep];
    const out = sanitizeJson(deep);
    let node: unknown = out;
    let depth = 0;
    while (typeof node === 'object' && node !== null) {
      node = Array.isArray(node) ? node[0] : (node as Record<string, unknown>).k;
      depth++;
    }
    expect(depth).toBe(100_000);
    expect(node).toBe('leaf');
  });

  it('is fast on a large payload', () => {
    const payload = { items: Array.from({ length: 200_000 }, (_, i) => ({ id: i, text: `message ${i} 😀`, tags: ['a', 'b'] })) };
    const t = performance.now();
    const out = sanitizeJson(payload);
    expect(out.items).toHaveLength(200_000);
    expect(performance.now() - t).toBeLessThan(3000);
  });
});
