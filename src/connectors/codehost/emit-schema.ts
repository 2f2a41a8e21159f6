/**
 * The five code-host emit kinds (spec §4.2), validated before any upstream call: a bad
 * payload is `BadConfig`, never GitHub's 422. Bodies are strict (an unknown field is a
 * caller's mistake worth hearing about).
 */
import { z } from 'zod';
import { BadConfig } from '../../errors.js';
import { REPO_FULL_NAME } from './repo-full-name.js';
import { GITHUB_COMMENT_MAX_CHARS, PR_SUMMARY_SENTINEL } from './sentinels.js';

export const CODEHOST_EMIT_KINDS = [
  'codehost.pr_summary_comment',
  'codehost.issue_comment',
  'codehost.review_comment',
  'codehost.label',
  'codehost.commit_status',
] as const;
type CodehostEmitKind = (typeof CODEHOST_EMIT_KINDS)[number];

/** spec §8: a commit status description is at most 140 characters. */
const STATUS_DESCRIPTION_MAX = 140;

// INTERFACE §9.3: GitHub's characters, neither part `.` or `..` (a path must never move).
const repoFullName = z.string().regex(REPO_FULL_NAME, { message: 'must be "owner/repo" with GitHub\'s characters' });
const number = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const commentBody = z.string().min(1).max(GITHUB_COMMENT_MAX_CHARS);
const sha = z.string().regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i, { message: 'must be a full commit SHA' });
// Receipts carry ids as strings (INTERFACE §8.6), so a caller may hand one back as is.
const commentId = z.union([
  number,
  z
    .string()
    .regex(/^[1-9]\d{0,15}$/)
    .transform(Number),
]);

/** The emit bodies by kind, as the edge's emit route and its OpenAPI document show them. */
export const CODEHOST_EMIT_BODIES = {
  'codehost.pr_summary_comment': z
    .object({
      repo_full_name: repoFullName,
      pr_number: number,
      body: commentBody.refine((b) => b.includes(PR_SUMMARY_SENTINEL), {
        message: `must contain ${PR_SUMMARY_SENTINEL}`,
      }),
      existing_comment_id: commentId.nullish().transform((v) => v ?? null),
    })
    .strict(),
  'codehost.issue_comment': z
    .object({ repo_full_name: repoFullName, issue_number: number, body: commentBody })
    .strict(),
  'codehost.review_comment': z
    .object({
      repo_full_name: repoFullName,
      pr_number: number,
      commit_id: sha,
      path: z.string().min(1).max(4096),
      line: number,
      body: commentBody,
      side: z
        .enum(['LEFT', 'RIGHT'])
        .nullish()
        .transform((v) => v ?? null),
    })
    .strict(),
  'codehost.label': z
    .object({
      repo_full_name: repoFullName,
      issue_number: number,
      // spec §4.2: whitespace-only entries are stripped; nothing left is BadConfig.
      labels: z
        .array(z.string().max(50))
        .max(100)
        .transform((ls) => ls.map((l) => l.trim()).filter((l) => l.length > 0))
        .refine((ls) => ls.length > 0, { message: 'must hold at least one non-blank label' }),
    })
    .strict(),
  'codehost.commit_status': z
    .object({
      repo_full_name: repoFullName,
      sha,
      state: z.enum(['error', 'failure', 'pending', 'success']),
      target_url: z
        .url({ protocol: /^https?$/ })
        .max(2048)
        .nullish()
        .transform((v) => v ?? null),
      description: z
        .string()
        .max(STATUS_DESCRIPTION_MAX)
        .nullish()
        .transform((v) => v ?? null),
      context: z
        .string()
        .min(1)
        .max(255)
        .nullish()
        .transform((v) => v ?? null),
    })
    .strict(),
};

/**
 * Writes the service makes on its own behalf, never emit kinds (the emit route refuses
 * them): a slash-command reply in a PR review thread (spec §4.4), which GitHub takes only
 * as `POST /repos/{o}/{r}/pulls/{n}/comments/{comment_id}/replies`.
 */
const ownSchemas = {
  'codehost.review_comment_reply': z
    .object({ repo_full_name: repoFullName, pr_number: number, comment_id: number, body: commentBody })
    .strict(),
};
type OwnKind = keyof typeof ownSchemas;

type Parsed<K extends CodehostEmitKind> = z.output<(typeof CODEHOST_EMIT_BODIES)[K]>;

/** One validated write, tagged by kind. */
export type CodehostWrite =
  | { [K in CodehostEmitKind]: { kind: K } & Parsed<K> }[CodehostEmitKind]
  | { [K in OwnKind]: { kind: K } & z.output<(typeof ownSchemas)[K]> }[OwnKind];

function isCodehostEmitKind(kind: string): kind is CodehostEmitKind {
  return (CODEHOST_EMIT_KINDS as readonly string[]).includes(kind);
}

/** Validates an emit; throws `BadConfig` naming the first bad field. */
export function parseEmit(kind: string, body: unknown): CodehostWrite {
  if (!isCodehostEmitKind(kind)) {
    throw new BadConfig(
      `unknown code-host emit kind ${JSON.stringify(kind)}; expected one of ${CODEHOST_EMIT_KINDS.join(', ')}`,
    );
  }
  return validated(kind, CODEHOST_EMIT_BODIES[kind], body);
}

/** Validates a write handed to the write actor: an emit kind, or one of the service's own. */
export function parseWrite(kind: string, body: unknown): CodehostWrite {
  return Object.hasOwn(ownSchemas, kind) ? validated(kind, ownSchemas[kind as OwnKind], body) : parseEmit(kind, body);
}

function validated(kind: string, schema: z.ZodType, body: unknown): CodehostWrite {
  const r = schema.safeParse(body);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const field = issue.path.length > 0 ? issue.path.join('.') : 'body';
    throw new BadConfig(`${kind}: ${field}: ${issue.message}`, { details: { field } });
  }
  return { kind, ...(r.data as object) } as CodehostWrite;
}
