/**
 * A node's log lines, kept in memory for assertions (pino writes one JSON line per call to
 * any object with `write`). Pass it to `startTestNode` as `logs`.
 */

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** pino's numeric levels. */
export const LOG_LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

export class LogCapture {
  readonly lines: LogLine[] = [];

  /** The pino destination. */
  readonly stream = {
    write: (chunk: string): void => {
      for (const raw of chunk.split('\n')) {
        if (raw.trim() === '') continue;
        try {
          this.lines.push(JSON.parse(raw) as LogLine);
        } catch {
          this.lines.push({ level: 0, msg: raw });
        }
      }
    },
  };

  /** Lines whose message contains `text`, at `level` or above. */
  find(text: string, level: number = LOG_LEVEL.debug): LogLine[] {
    return this.lines.filter((l) => l.level >= level && typeof l.msg === 'string' && l.msg.includes(text));
  }
}
