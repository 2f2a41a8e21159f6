/** Reads one sample of a node's `/metrics` (Prometheus text format). */

/** The value of `name{labels}` on the node at `url`; 0 while the series has no sample. */
export async function scrapeSample(
  url: string,
  name: string,
  labels: Record<string, string>,
  opts: { timeoutMs?: number } = {},
): Promise<number> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000) });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const text = await res.text();
  const want = Object.entries(labels);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map(
      [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]),
    );
    if (want.every(([k, v]) => have.get(k) === v)) return Number(m[3]);
  }
  return 0;
}
