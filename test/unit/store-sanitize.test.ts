import { describe, expect, it } from 'vitest';
import { jsonRowChunks } from '../../src/store/json-rows.js';
import { jsonText, sanitizeJson, sanitizeText } from '../../src/store/sanitize.js';

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

  // How fast is the benchmarks' business; here: a webhook-sized string comes out exact.
  it('cleans a 25 MiB string with bad characters spread through it', () => {
    const chunk = 'a'.repeat(1023);
    const big = `${chunk}\u0000`.repeat(25 * 1024) + '\ud800';
    const out = sanitizeText(big);
    expect(out).toHaveLength(25 * 1024 * 1023 + 1);
    expect(out).toBe(chunk.repeat(25 * 1024) + '\ufffd');
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

  it('copies a large payload exactly, cleaning only what is bad', () => {
    const payload = {
      items: Array.from({ length: 200_000 }, (_, i) => ({
        id: i,
        text: i % 1000 === 0 ? `message ${i}\u0000` : `message ${i} 😀`,
        tags: ['a', 'b'],
      })),
    };
    const out = sanitizeJson(payload);
    expect(out.items).toHaveLength(200_000);
    expect(out.items[0]).toEqual({ id: 0, text: 'message 0', tags: ['a', 'b'] });
    expect(out.items[199_999]).toEqual({ id: 199_999, text: 'message 199999 😀', tags: ['a', 'b'] });
    expect(out.items.filter((x) => x.text.includes('\u0000'))).toEqual([]);
    expect(out.items.filter((x, i) => x.text !== payload.items[i]!.text)).toHaveLength(200);
    expect(payload.items[1000]!.text).toBe('message 1000\u0000');
  });
});

describe('jsonText', () => {
  it('is the value’s own JSON text when nothing in it needs cleaning', () => {
    const clean = { text: 'emoji 😀, CJK 漢字, a backslash \\ and a quote "', n: [1, null, true], 'k€y': 'v' };
    expect(jsonText(clean)).toBe(JSON.stringify(clean));
    expect(jsonText(undefined)).toBe('null');
    expect(jsonText(null)).toBe('null');
  });

  it('cleans NUL and lone surrogates in values and keys, at any depth', () => {
    const dirty = { 'k\u0000': [{ t: 'a\u0000b' }, 'x\ud800y', 'ok 😀'], low: '\udc00' };
    const text = jsonText(dirty);
    expect(JSON.parse(text)).toEqual({ k: [{ t: 'ab' }, 'x\ufffdy', 'ok 😀'], low: '\ufffd' });
    expect(text).not.toMatch(/\\u0000|\\ud[89a-f]/i);
  });

  it('gives text that only looks escaped the same value through the slow path', () => {
    const lookalike = { path: 'C:\\u0000\\ud800' };
    expect(JSON.parse(jsonText(lookalike))).toEqual(lookalike);
  });

  it('converts toJSON values on the cleaning path as JSON.stringify does', () => {
    const d = new Date('2024-01-02T03:04:05.000Z');
    expect(jsonText({ d, t: 'a\u0000' })).toBe('{"d":"2024-01-02T03:04:05.000Z","t":"a"}');
  });
});

describe('jsonRowChunks', () => {
  it('is one document for a usual batch', () => {
    const rows = [{ a: 1 }, { b: 'x' }];
    expect(jsonRowChunks(rows)).toEqual([JSON.stringify(rows)]);
    expect(jsonRowChunks([])).toEqual(['[]']);
  });

  it('splits between rows past the limit, in order, a large row alone, each part clean', () => {
    const rows = [{ t: 'a'.repeat(40) }, { t: 'b'.repeat(40) }, { t: `c\u0000${'c'.repeat(200)}` }, { t: 'd' }];
    const chunks = jsonRowChunks(rows, 100);
    expect(chunks.length).toBe(3);
    for (const c of chunks) expect(c).not.toMatch(/\\u0000/);
    const back = chunks.flatMap((c) => JSON.parse(c) as Array<{ t: string }>).map((r) => r.t);
    expect(back).toEqual(['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(201), 'd']);
    expect(chunks.slice(0, 1).every((c) => c.length <= 100)).toBe(true);
  });

  it('goes row by row when the batch cannot be one string', () => {
    // Stands in for a batch past V8's longest string: stringified inside the array (key "0",
    // "1"), it throws the RangeError V8 would; alone (key "") it is a small row.
    const row = (n: number) => ({
      toJSON: (key: string) => {
        if (key !== '') throw new RangeError('Invalid string length');
        return { n };
      },
    });
    expect(jsonRowChunks([row(1), row(2)], 100)).toEqual(['[{"n":1},{"n":2}]']);
    // A row that cannot be one string by itself still fails, as before.
    expect(() => jsonRowChunks([{ toJSON: () => 'x'.repeat(-1) }])).toThrow(RangeError);
  });
});
