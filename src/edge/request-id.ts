/**
 * Request ids (INTERFACE §9.3): a caller's `X-Request-Id` is kept when it is 1–128
 * characters of `[A-Za-z0-9._:-]`; anything else (absent, too long, other characters,
 * repeated header) is replaced by a fresh UUID, so a log line never carries caller junk.
 */
import { randomUUID } from 'node:crypto';

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && WELL_FORMED.test(header) ? header : randomUUID();
}
