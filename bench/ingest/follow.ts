/**
 * `--follow`: during the paced runs, the bench tenant has one webhook (a receiver in this
 * process) and one SSE client on the change feed (INTERFACE §10.1, §10.2), and the bench
 * reports commit → delivered: for every change of the run, from its `changed_at` (the commit,
 * Postgres's clock, on this machine) to its arrival at the receiver and on the stream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

export interface FollowFigures {
  changes: number;
  /** Changes of the run that one of the followers still had not got after a minute. */
  missing: number;
  webhookP50Ms: number | null;
  webhookP99Ms: number | null;
  sseP50Ms: number | null;
  sseP99Ms: number | null;
}

export interface Follow {
  /** The tenant's feed head now. */
  head(): Promise<number>;
  /** Waits (bounded) until both followers have every change up to `to`, then the latencies of (from, to]. */
  measure(from: number, to: number): Promise<FollowFigures>;
  stop(): Promise<void>;
}

const pct = (sorted: number[], p: number): number | null =>
  sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function startFollow(pool: pg.Pool, edgeUrl: string, apiKey: string, tenantId: string): Promise<Follow> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const byWebhook = new Map<number, number>();
  const bySse = new Map<number, number>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const at = Date.now();
      for (const c of (JSON.parse(body) as { changes: Array<{ cursor: string }> }).changes) {
        byWebhook.set(Number(c.cursor), at);
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bench-hook`;
  const made = await fetch(`${edgeUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  if (made.status !== 201) throw new Error(`bench webhook not made: ${made.status} ${await made.text()}`);

  const ctl = new AbortController();
  const stream = await fetch(`${edgeUrl}/api/v1/graph/changes?cursor=latest`, {
    headers: { ...auth, accept: 'text/event-stream' },
    signal: ctl.signal,
  });
  const reading = (async () => {
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const at = Date.now();
      buf += value;
      let end: number;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const id = /^id: (\d+)$/m.exec(buf.slice(0, end));
        if (id) bySse.set(Number(id[1]), at);
        buf = buf.slice(end + 2);
      }
    }
  })().catch(() => undefined);

  const head = async () =>
    Number(
      (await pool.query<{ s: string }>('SELECT last_seq AS s FROM tenant_feed WHERE tenant_id = $1', [tenantId]))
        .rows[0]?.s ?? 0,
    );
  return {
    head,
    async measure(from, to) {
      const end = Date.now() + 60_000;
      const has = (m: Map<number, number>) => to <= from || m.has(to);
      while ((!has(byWebhook) || !has(bySse)) && Date.now() < end) await sleep(100);
      const { rows } = await pool.query<{ seq: string; at: Date }>(
        'SELECT seq, changed_at AS at FROM graph_changes WHERE tenant_id = $1 AND seq > $2 AND seq <= $3',
        [tenantId, from, to],
      );
      const lat = (m: Map<number, number>) =>
        rows
          .map((r) => (m.get(Number(r.seq)) ?? Number.NaN) - r.at.getTime())
          .filter((v) => Number.isFinite(v))
          .sort((a, b) => a - b);
      const [w, s] = [lat(byWebhook), lat(bySse)];
      return {
        changes: rows.length,
        missing: rows.length - Math.min(w.length, s.length),
        webhookP50Ms: pct(w, 50),
        webhookP99Ms: pct(w, 99),
        sseP50Ms: pct(s, 50),
        sseP99Ms: pct(s, 99),
      };
    },
    async stop() {
      ctl.abort();
      await reading;
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
