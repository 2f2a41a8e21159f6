/**
 * Slash commands in issue and PR comments (spec §4.4): a comment whose first word is
 * `/service` followed by `explain|impact|slice|query|help`. `explain`, `impact` and
 * `slice` take the rest of the first line; `query` takes the rest of the comment
 * (natural language may span lines). `/service` with no verb or an unknown one is
 * answered with help, so a typo gets a useful reply instead of silence.
 */

export type SlashVerb = 'explain' | 'impact' | 'slice' | 'query' | 'help';

export type SlashCommand = { verb: SlashVerb; argument: string } | { verb: 'unknown'; word: string };

const VERBS: ReadonlySet<string> = new Set<SlashVerb>(['explain', 'impact', 'slice', 'query', 'help']);
const HEAD = /^\s*\/service(?=\s|$)/;

/** The command a comment body starts with, or null when it is not a slash command. */
export function parseSlashCommand(body: string): SlashCommand | null {
  const head = HEAD.exec(body);
  if (!head) return null;
  const rest = body.slice(head[0].length);
  const word = /^[ \t]*(\S*)/.exec(rest)!;
  const verb = word[1]!.toLowerCase();
  if (verb === '') return { verb: 'help', argument: '' };
  if (!VERBS.has(verb)) return { verb: 'unknown', word: word[1]!.slice(0, 40) };
  const tail = rest.slice(word[0].length);
  const argument = verb === 'query' ? tail.trim() : (tail.split(/\r?\n/, 1)[0] ?? '').trim();
  return { verb: verb as SlashVerb, argument };
}
