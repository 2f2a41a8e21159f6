/**
 * `dev --ready-file PATH` (issue 34): the ready line, also as a file that exists only while
 * this `dev` is ready. A script started in the background waits for the file rather than for
 * a line on a pipe (`until [ -s ready.json ]; do sleep 1; done`), so the file must never be
 * seen half-written (written aside, then renamed into place) and never left from an earlier
 * run (removed at start and again when the stop begins). Mode 0600: it holds the API key and
 * the master key.
 */
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export interface ReadyFile {
  write(ready: Record<string, unknown>): void;
  remove(): void;
}

/** Removes an earlier run's file; throws in one line when the directory does not exist. */
export function prepareReadyFile(path: string): ReadyFile {
  const file = resolve(path);
  const dir = dirname(file);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(`--ready-file: the directory ${dir} does not exist`);
  if (statSync(file, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(`--ready-file: ${file} is a directory; name a file`);
  rmSync(file, { force: true });
  let written = false;
  return {
    write(ready) {
      const aside = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(aside, `${JSON.stringify(ready)}\n`, { mode: 0o600 });
      renameSync(aside, file);
      written = true;
    },
    remove() {
      if (written) rmSync(file, { force: true });
      written = false;
    },
  };
}
