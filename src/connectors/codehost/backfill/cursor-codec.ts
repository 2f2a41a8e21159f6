/**
 * Bytes of a `BackfillCursor` for the cursor KV bucket, and back.
 *
 * The bound (spec §8: under 100 KB) holds by construction: decode and encode both refuse
 * a queue over the spec caps, a repo id above 2^53 or a PR number above 2^31 - 1 (GitHub's
 * GraphQL `Int`), and the PR queue is written as ascending deltas, so 10 000 numbers cost
 * at most ~71 KB even when spread over the whole range. `test/unit/codehost-backfill-cursor`
 * proves it at the caps with the longest legal names (owner 39, repo 100 characters).
 */
import { z } from 'zod';
import { Internal } from '../../../errors.js';
import { SPEC_CAPS, type BackfillCursor } from './backfill-cursor.js';

/** spec §8 "under 100 KB", read as decimal kilobytes: stricter than the bucket's 100 KiB. */
export const CURSOR_MAX_BYTES = 100_000;
export const MAX_PR_NUMBER = 2 ** 31 - 1;
/** GitHub owner logins are at most 39 characters and repo names at most 100. */
const MAX_FULL_NAME = 39 + 1 + 100;

const repoId = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const prNumber = z.number().int().min(1).max(MAX_PR_NUMBER);
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const page = z.number().int().min(1).max(1_000_000);

const stored = z
  .object({
    v: z.literal(1),
    phase: z.enum(['ReposListing', 'PrEnumerating', 'PrDiffFetching', 'Done']),
    repos_resume_page: page,
    repos_resume_after: repoId.nullable(),
    repos_listed: z.boolean(),
    pending_repos: z.array(repoId).max(SPEC_CAPS.pendingRepos),
    repo: z
      .object({
        id: repoId,
        full_name: z.string().min(3).max(MAX_FULL_NAME),
        pulls_page: page,
        pulls_after: prNumber.nullable(),
        pulls_listed: z.boolean(),
      })
      .strict()
      .nullable(),
    /** First number, then positive gaps. */
    pending_prs: z.array(prNumber).max(SPEC_CAPS.pendingPrs),
    counts: z
      .object({
        steps: count,
        repos_listed: count,
        repos_done: count,
        repos_skipped: count,
        prs_listed: count,
        prs_done: count,
        prs_oversized: count,
        prs_skipped: count,
      })
      .strict(),
  })
  .strict();

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function encodeCursor(c: BackfillCursor): Uint8Array {
  const prs = c.pending_prs;
  for (let i = 1; i < prs.length; i++) {
    if (prs[i]! <= prs[i - 1]!) throw new Internal('backfill cursor PR queue is not strictly ascending');
  }
  const deltas = prs.map((n, i) => (i === 0 ? n : n - prs[i - 1]!));
  const checked = stored.safeParse({ ...c, pending_prs: deltas });
  if (!checked.success) throw new Internal(`backfill cursor is out of bounds: ${checked.error.issues[0]?.message}`);
  const bytes = enc.encode(JSON.stringify(checked.data));
  // Cannot happen within the bounds above; a failure here is a bug, never a truncation.
  if (bytes.byteLength >= CURSOR_MAX_BYTES) throw new Internal(`backfill cursor is ${bytes.byteLength} bytes`);
  return bytes;
}

/** A value this codec did not write (or a corrupted one) is an Internal error naming the problem. */
export function decodeCursor(bytes: Uint8Array): BackfillCursor {
  let raw: unknown;
  try {
    raw = JSON.parse(dec.decode(bytes));
  } catch (err) {
    throw new Internal('backfill cursor is not JSON', { cause: err });
  }
  const parsed = stored.safeParse(raw);
  if (!parsed.success) throw new Internal(`backfill cursor is malformed: ${parsed.error.issues[0]?.message}`);
  const c = parsed.data;
  const prs: number[] = [];
  for (const d of c.pending_prs) {
    const n = prs.length === 0 ? d : prs[prs.length - 1]! + d;
    if (n > MAX_PR_NUMBER) throw new Internal('backfill cursor PR queue overflows');
    prs.push(n);
  }
  return { ...c, pending_prs: prs };
}
