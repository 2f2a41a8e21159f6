/** Unit: the pure checks behind INTERFACE §9.3 and §9.4 (depth scanner, repo names, dead-letter causes). */
import { describe, expect, it } from 'vitest';
import { isRepoFullName } from '../../src/connectors/codehost/repo-full-name.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../src/edge/json-depth.js';
import { Internal } from '../../src/errors.js';
import { errorText } from '../../src/runtime/error-text.js';

const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('jsonTooDeep', () => {
  it('allows exactly 128 levels and refuses 129, for arrays and objects', () => {
    expect(jsonTooDeep(nest(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(nest(MAX_JSON_DEPTH + 1))).toBe(true);
    const obj = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    expect(jsonTooDeep(obj(128))).toBe(false);
    expect(jsonTooDeep(Buffer.from(obj(129)))).toBe(true);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(jsonTooDeep(JSON.stringify({ s: '['.repeat(10_000) }))).toBe(false);
    expect(jsonTooDeep(JSON.stringify({ s: '\\"[[[[' + '['.repeat(500) }))).toBe(false);
    expect(jsonTooDeep(`{"s":"\\\\"}${nest(0)}`)).toBe(false);
    expect(jsonTooDeep(`["\\\\", ${nest(200)}]`)).toBe(true);
  });

  it('scans a million levels without recursion', () => {
    expect(jsonTooDeep(nest(1_000_000))).toBe(true);
  });
});

describe('isRepoFullName (INTERFACE §9.3)', () => {
  it.each(['octo/hello', 'Octo-Cat/hello.world', 'a/b_c-d.e', 'a1/..b', 'x/.github'])('accepts %s', (n) =>
    expect(isRepoFullName(n)).toBe(true),
  );
  it.each([
    '../..',
    'a/..',
    'a/.',
    '../b',
    './b',
    'a/b/c',
    'a',
    'a/',
    '/b',
    'o_x/r',
    'a/b?c',
    'a/b#c',
    'a/b%2F',
    'ä/b',
  ])('refuses %s', (n) => expect(isRepoFullName(n)).toBe(false));
});

describe('dead-letter cause (INTERFACE §9.4)', () => {
  it('follows the cause chain past "internal error" wrappers to what threw', () => {
    const cause = new RangeError('Maximum call stack size exceeded');
    expect(errorText(new Internal('internal error', { cause }))).toBe('RangeError: Maximum call stack size exceeded');
    const pg = Object.assign(new Error('value too long for type character varying(10)'), { code: '22001' });
    expect(errorText(new Internal('actor install/x failed to load its state', { cause: pg }))).toBe(
      'Internal: actor install/x failed to load its state <- caused by Error: value too long for type character varying(10)',
    );
  });
});
