import { describe, expect, it } from 'vitest';
import { escapeLike, splitCjk } from '../../src/graph/cjk-query.js';

describe('unit: CJK part of a graph search (INTERFACE §9.5)', () => {
  it('takes Han, kana and Hangul runs out of the query as escaped substring patterns', () => {
    expect(splitCjk('deploy 部署 tomorrow')).toEqual({ cjk: ['%部署%'], rest: 'deploy   tomorrow' });
    expect(splitCjk('東京でリリース、서울')).toEqual({ cjk: ['%東京でリリース%', '%서울%'], rest: ' 、 ' });
    expect(splitCjk('部署 部署')).toEqual({ cjk: ['%部署%'], rest: '   ' });
    expect(splitCjk('100% done_ok')).toEqual({ cjk: [], rest: '100% done_ok' });
  });

  it('escapes every LIKE metacharacter, so user input never becomes a pattern', () => {
    expect(escapeLike('a%b_c\\d')).toBe('a\\%b\\_c\\\\d');
    expect(escapeLike('部署')).toBe('部署');
  });
});
