/**
 * The text of a slash-command reply (spec §4.4, INTERFACE §6, §8.8).
 *
 * Every reply starts with `<!-- service:slash-reply -->` so it never retriggers (spec §6.3
 * Tier 1). The whole body, sentinel included, is at most 60 000 Unicode code points;
 * truncation cuts between code points (never inside a surrogate pair), closes a code
 * fence left open, and says visibly that it truncated.
 */
import { PR_SUMMARY_SENTINEL, SLASH_REPLY_SENTINEL } from '../sentinels.js';
import type { SlashVerb } from './parse-command.js';

/** INTERFACE §8.8. */
export const REPLY_MAX_CODE_POINTS = 60_000;
export const TRUNCATION_NOTE = '\n\n---\n_This reply was truncated: it was longer than 60 000 characters._';

const USAGE: Record<Exclude<SlashVerb, 'help'>, { arg: string; what: string }> = {
  explain: { arg: '<symbol>', what: 'explains a symbol: what it is, where it is defined, how it is used' },
  impact: { arg: '<symbol>', what: 'lists call sites and reverse dependencies of a symbol' },
  slice: { arg: '<file path>', what: 'returns a token-bounded code slice anchored at a path' },
  query: { arg: '<question>', what: 'asks the code index a question in natural language' },
};

function helpText(): string {
  const lines = Object.entries(USAGE).map(([verb, u]) => `- \`/service ${verb} ${u.arg}\`: ${u.what}`);
  return [
    '**Slash commands**',
    '',
    ...lines,
    '- `/service help`: shows this message',
    '',
    'Start a comment with the command.',
  ].join('\n');
}

function usageOf(verb: Exclude<SlashVerb, 'help'>): string {
  return `\`/service ${verb} ${USAGE[verb].arg}\`: ${USAGE[verb].what}`;
}

export type ReplyContent =
  | { type: 'answer'; command: { verb: SlashVerb; argument: string }; text: string }
  | { type: 'failure'; command: { verb: SlashVerb; argument: string }; what: string }
  | { type: 'usage'; verb: Exclude<SlashVerb, 'help'> }
  | { type: 'help'; unknownWord?: string }
  | { type: 'not_indexed'; reason: string };

/**
 * The whole comment body. `replyTo` (the triggering comment's id) goes in a second hidden
 * marker, so a redelivery can find a reply whose record was lost (see answer-slash.ts).
 */
export function renderReply(content: ReplyContent, replyTo: string | number | null = null): string {
  const marker = replyTo === null ? '' : `${replyMarker(replyTo)}\n`;
  return truncateReply(`${SLASH_REPLY_SENTINEL}\n${marker}${bodyOf(content)}`);
}

export function replyMarker(replyTo: string | number): string {
  return `<!-- service:slash-reply-to:${replyTo} -->`;
}

function bodyOf(c: ReplyContent): string {
  switch (c.type) {
    case 'answer':
      return `${title(c.command)}\n\n${neutralise(c.text.trim() === '' ? '_The indexer returned no text._' : c.text)}`;
    case 'failure':
      return `${title(c.command)}\n\nThis command could not be answered: ${c.what}.`;
    case 'usage':
      return `\`/service ${c.verb}\` needs an argument.\n\nUsage: ${usageOf(c.verb)}`;
    case 'help':
      return c.unknownWord === undefined ? helpText() : `Unknown command ${code(c.unknownWord)}.\n\n${helpText()}`;
    case 'not_indexed':
      return `This repository is not indexed: ${c.reason}.`;
  }
}

function title(cmd: { verb: SlashVerb; argument: string }): string {
  const arg = cmd.argument === '' ? '' : ` ${code(firstCodePoints(cmd.argument.replace(/\s+/g, ' '), 200))}`;
  return `**\`/service ${cmd.verb}\`**${arg}`;
}

/** Inline code that survives backticks in the text (CommonMark: a longer fence). */
function code(s: string): string {
  const longest = Math.max(0, ...(s.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad = s.startsWith('`') || s.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${s}${pad}${fence}`;
}

/** Daemon text must not carry the PR-summary sentinel: that comment would then read as our summary. */
function neutralise(text: string): string {
  return text.split(PR_SUMMARY_SENTINEL).join('<!-- service:pr-summary (quoted) -->');
}

export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** The first `max` code points of `s` (a surrogate pair is one code point, never split). */
function firstCodePoints(s: string, max: number): string {
  let n = 0;
  let end = 0;
  for (const ch of s) {
    if (n === max) break;
    n++;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** Room kept for closing a code fence the cut left open. */
const FENCE_ROOM = 64;

/** INTERFACE §8.8: the whole body within 60 000 code points, with a visible note when cut. */
export function truncateReply(body: string, max = REPLY_MAX_CODE_POINTS): string {
  if (codePointLength(body) <= max) return body;
  let kept = firstCodePoints(body, max - codePointLength(TRUNCATION_NOTE) - FENCE_ROOM);
  // A code block left open would swallow the note; close it with its own marker.
  const open = openFence(kept);
  if (open !== null && open.length < FENCE_ROOM) kept += `\n${open}`;
  return kept + TRUNCATION_NOTE;
}

/** The marker of a fenced code block still open at the end of `s` (CommonMark §4.5), or null. */
function openFence(s: string): string | null {
  let open: string | null = null;
  for (const m of s.matchAll(/^ {0,3}(`{3,}|~{3,})/gm)) {
    const marker = m[1]!;
    if (open === null) open = marker;
    else if (marker[0] === open[0] && marker.length >= open.length) open = null;
  }
  return open;
}
