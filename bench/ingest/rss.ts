/**
 * Node RSS over a run (issue 12 target: ≤ 250 MB throughout): VmRSS of each process read
 * from /proc every 500 ms, the peak kept. A process that has exited keeps its last peak.
 */
import { readFileSync } from 'node:fs';
import type { Child } from './processes.js';

const EVERY_MS = 500;

function rssMiB(pid: number | undefined): number | null {
  try {
    const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
    return Number.isFinite(kb) ? kb / 1024 : null;
  } catch {
    return null;
  }
}

export class RssSampler {
  private readonly peak = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly children: Child[]) {
    this.sample();
    this.timer = setInterval(() => this.sample(), EVERY_MS);
    this.timer.unref();
  }

  add(c: Child): void {
    this.children.push(c);
    this.sample();
  }

  private sample(): void {
    for (const c of this.children) {
      const v = rssMiB(c.proc.pid);
      if (v !== null && v > (this.peak.get(c.name) ?? 0)) this.peak.set(c.name, v);
    }
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }

  /** Peak VmRSS per process name, MiB. */
  peaks(): Record<string, number> {
    return Object.fromEntries([...this.peak].map(([k, v]) => [k, Math.round(v)]));
  }
}
