/**
 * A node's log lines, kept in memory for assertions (pino writes one JSON line per call to
 * any object with `write`). Pass it to `startTestNode` as `logs`.
 */

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** pino's numeric levels (lines carry the name, src/log.ts; `find` compares by number). */
export const LOG_LEVEL = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;

export class LogCapture {
  readonly lines: LogLine[] = [];

  /** The pino destination. */
  readonly stream = {
    write: (chunk: string): void => {
      for (const raw of chunk.split('\n')) {
        if (raw.trim() === '') continue;
        try {
          const line = JSON.parse(raw) as Omit<LogLine, 'level'> & { level: unknown };
          const level = typeof line.level === 'string' ? LOG_LEVEL[line.level as keyof typeof LOG_LEVEL] : line.level;
          this.lines.push({ ...line, level: typeof level === 'number' ? level : 0 } as LogLine);
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
