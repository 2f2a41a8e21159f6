/**
 * A short smoke of the chaos suite (`npm run chaos`, bench/chaos): one node kill and one
 * stop of every node under steady webhook load, against its own nats-server and database.
 * Nothing acknowledged is lost, nothing is stored twice, and the deliveries that failed
 * while every node was down are brought in by reconciliation (INTERFACE §9.4). Slash-command
 * write-backs are off here (`--slash 0`): the smoke covers the ingest path.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { testAdminDatabaseUrl } from '../support/env.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Row {
  scenario: string;
  sent: number;
  acknowledged: number;
  stored: number;
  lost: number;
  duplicated: number;
  recovered_by_reconciliation: number;
  not_recovered: number;
  takeover_ms: number[];
}

it('loses nothing acknowledged and stores nothing twice through a node kill and a full outage', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/chaos/run.ts', '--quick', '--only', 'a,e', '--rate', '15', '--slash', '0'],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, BENCH_ADMIN_DATABASE_URL: testAdminDatabaseUrl() },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const last = stdout.trim().split('\n').pop() ?? '';
  expect(last.startsWith('{'), `${stdout}\n${stderr.slice(-3000)}`).toBe(true);
  const rows = (JSON.parse(last) as { chaos: { rows: Row[] } }).chaos.rows;
  expect(code, stderr.slice(-3000)).toBe(0);
  expect(rows.map((r) => r.scenario)).toEqual(['a', 'e']);
  for (const r of rows) {
    expect(r.sent).toBeGreaterThan(0);
    expect(r).toMatchObject({ lost: 0, duplicated: 0, not_recovered: 0, stored: r.sent });
  }
  expect(rows[0]!.takeover_ms).toHaveLength(1);
  const e = rows[1]!;
  expect(e.acknowledged).toBeLessThan(e.sent); // deliveries failed while every node was down...
  expect(e.recovered_by_reconciliation).toBe(e.sent - e.acknowledged); // ...and reconciliation brought them in
}, 300_000);
