/**
 * The hook the admin install calls once its transaction committed (INTERFACE §3: "the
 * PR-diff backfill starts"). The backfill walker provides it (`backfill/attach-walkers.ts`).
 */
import type { Install } from '../../store/installs.js';

export type BackfillStarter = (install: Install) => Promise<void>;
