/**
 * What the code-host backfill walker (`codehost-backfill.ts`, spec §3.2) is asked: its key,
 * its messages and answers, and where its cursor lives in the cursor bucket.
 */
import type { KeyOf } from '../../runtime/ports.js';
import { kvKey } from '../../runtime/kv-port.js';

export const CODEHOST_BACKFILL_KIND = 'codehost-backfill';

/**
 * `resume` starts or continues the walk; `tick` (its own ticker) makes one step;
 * `addRepos` queues repositories added to the installation.
 */
export type CodehostBackfillProtocol = {
  resume: { msg: object; answer: { ok: true } };
  tick: { msg: object; answer: Record<string, unknown> };
  addRepos: { msg: { repoIds?: unknown }; answer: Record<string, unknown> };
};

export function codehostBackfillKey(installId: string): KeyOf<CodehostBackfillProtocol> {
  return { kind: CODEHOST_BACKFILL_KIND, id: [installId] };
}

/** Where a walk's cursor lives in the cursor bucket. */
export function backfillCursorKey(installId: string): string {
  return kvKey([CODEHOST_BACKFILL_KIND, installId]);
}
