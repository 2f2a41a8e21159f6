/**
 * The load generator: a freshly signed request per send (route-traffic.ts) over undici
 * connection pools (one per URL, `connections` spread over them, HTTP/1.1 keep-alive, one
 * request in flight per connection). Closed loop (`connections` requests in flight, as fast
 * as answers come) measures how many events the edge accepts per second; paced (`rate` per
 * second) measures latency below saturation. Every run is bounded by `durationS`; only
 * 127.0.0.1 is ever targeted.
 *
 * The generator shares the machine's CPUs with the service, so what it costs per request is
 * taken from what the service can use: undici's `dispatch` with bare callbacks (no response
 * stream, no per-request promise) costs less than half of what autocannon did per request on
 * this route mix (docs/performance.md, the `bench` column).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, type Dispatcher } from 'undici';
import type { RouteTraffic } from './route-traffic.js';

export interface LoadOptions {
  urls: string[];
  /** The route: its path, and a freshly signed request per send. */
  traffic: RouteTraffic;
  /** The run's prefix, to find its events afterwards (`traffic.idPrefix`). */
  prefix: string;
  connections: number;
  durationS: number;
  /** Requests per second across all connections; omit for a closed loop. */
  rate?: number;
  /** Added to each request's index (GitHub: the issue number), so a run can make new graph nodes. */
  firstIndex?: number;
}

export interface LoadResult {
  sent: number;
  accepted: number;
  refused: number;
  errors: number;
  durationS: number;
  acceptedPerS: number;
  ackP50Ms: number;
  ackP99Ms: number;
  statusCodes: Record<string, number>;
  /**
   * Requests sent but not answered when the run's time was up (the generator stops waiting):
   * counted apart, neither accepted nor refused; the edge may still have published them.
   */
  inFlightAtEnd: number;
  /** CPU the server process(es) used per accepted request, in µs (set by the scenario). */
  serverCpuUsPerAccepted?: number;
}

/** An unanswered request fails after this long (autocannon's `timeout: 10` before). */
const REQUEST_TIMEOUT_MS = 10_000;
/** After a failed request a connection waits this long before the next, so a dead edge is not spun on. */
const AFTER_ERROR_MS = 50;
/** How often a paced run looks at what is due. */
const PACE_TICK_MS = 2;

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  for (const u of o.urls) {
    if (new URL(u).hostname !== '127.0.0.1') throw new Error(`bench traffic goes to 127.0.0.1 only, not ${u}`);
  }
  if (o.urls.length === 0 || o.connections < 1) throw new Error('runLoad needs a URL and at least one connection');
  const pools = o.urls.map(
    (u, i) =>
      new Pool(u, {
        // Connections spread over the URLs as evenly as they go.
        connections: Math.ceil((o.connections - i) / o.urls.length),
        pipelining: 1,
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      }),
  );
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let sent = 0;
  let accepted = 0;
  let refused = 0;
  let errors = 0;
  let inFlight = 0;
  let running = true;

  /** Sends one request; `then` runs when it is answered or failed (never after the run ended). */
  const send = (then: (failed: boolean) => void): void => {
    const n = sent++;
    const d = o.traffic.request(n + (o.firstIndex ?? 0), o.prefix);
    const started = performance.now();
    let status = 0;
    inFlight++;
    // undici takes a handler as this (controller) kind only when it has onRequestStart.
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => undefined,
      onResponseStart: (_c, statusCode) => {
        status = statusCode;
      },
      onResponseData: () => undefined,
      onResponseEnd: () => {
        inFlight--;
        if (!running) return;
        latencies.push(performance.now() - started);
        statusCodes[status] = (statusCodes[status] ?? 0) + 1;
        if (status >= 200 && status < 300) accepted++;
        else refused++;
        then(false);
      },
      onResponseError: () => {
        inFlight--;
        if (!running) return;
        errors++;
        then(true);
      },
    };
    pools[n % pools.length]!.dispatch(
      { origin: o.urls[n % pools.length]!, path: o.traffic.path, method: 'POST', headers: d.headers, body: d.body },
      handler,
    );
  };

  const startedAt = performance.now();
  if (o.rate === undefined) {
    // Closed loop: each answer sends the next.
    const next = (failed: boolean): void => {
      if (!running) return;
      if (failed) setTimeout(() => running && send(next), AFTER_ERROR_MS);
      else send(next);
    };
    for (let i = 0; i < o.connections; i++) send(next);
  } else {
    // Open loop at `rate`, at most `connections` in flight: what falls due while all are
    // busy goes out as soon as one is free.
    const rate = o.rate;
    const tick = setInterval(() => {
      if (!running) return clearInterval(tick);
      const due = Math.min(Math.floor(((performance.now() - startedAt) / 1000) * rate), Math.ceil(rate * o.durationS));
      while (sent < due && inFlight < o.connections) send(() => undefined);
    }, PACE_TICK_MS);
  }

  await sleep(o.durationS * 1000);
  running = false;
  // Answers that come later are not counted (their handlers see `running` false).
  const durationS = o.durationS;
  const inFlightAtEnd = inFlight;
  await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies.length === 0 ? 0 : latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  return {
    sent,
    accepted,
    refused,
    errors,
    durationS,
    acceptedPerS: accepted / durationS,
    ackP50Ms: Math.round(pct(0.5)),
    ackP99Ms: Math.round(pct(0.99)),
    statusCodes,
    inFlightAtEnd,
  };
}
