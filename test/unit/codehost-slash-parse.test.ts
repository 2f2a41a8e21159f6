/** unit: slash-command parsing (spec §4.4). */
import { describe, expect, it } from 'vitest';
import { parseSlashCommand } from '../../src/connectors/codehost/slash/parse-command.js';

describe('unit: slash command parsing', () => {
  const table: Array<[string, ReturnType<typeof parseSlashCommand>]> = [
    ['/service explain Foo.bar', { verb: 'explain', argument: 'Foo.bar' }],
    ['  /service impact   parseArgs  \nmore text', { verb: 'impact', argument: 'parseArgs' }],
    ['/service slice src/app/main.ts', { verb: 'slice', argument: 'src/app/main.ts' }],
    [
      '/service query where are\r\nretries configured?',
      { verb: 'query', argument: 'where are\r\nretries configured?' },
    ],
    ['/service help', { verb: 'help', argument: '' }],
    ['/service HELP', { verb: 'help', argument: '' }],
    ['/service', { verb: 'help', argument: '' }],
    ['/service explain', { verb: 'explain', argument: '' }],
    ['/service deploy prod', { verb: 'unknown', word: 'deploy' }],
    ['please run /service explain Foo', null],
    ['/services explain Foo', null],
    ['> /service explain Foo', null],
    ['', null],
  ];
  for (const [body, expected] of table) {
    it(`${JSON.stringify(body)} → ${JSON.stringify(expected)}`, () => {
      expect(parseSlashCommand(body)).toEqual(expected);
    });
  }
});
