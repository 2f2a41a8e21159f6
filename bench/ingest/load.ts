/**
 * The load generator: autocannon with a freshly signed request per send (route-traffic.ts). Closed loop
 * (`connections` requests in flight, as fast as answers come) measures how many events
 * the edge accepts per second; paced (`rate` per second) measures latency below saturation.
 * Every run is bounded by `durationS`; only 127.0.0.1 is ever targeted.
 */
import autocannon from 'autocannon';
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
   * Requests sent but not answered when the run's time was up (autocannon stops waiting):
   * counted apart, neither accepted nor refused; the edge may still have published them.
   */
  inFlightAtEnd: number;
  /** CPU the server process(es) used per accepted request, in µs (set by the scenario). */
  serverCpuUsPerAccepted?: number;
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  for (const u of o.urls) {
    if (new URL(u).hostname !== '127.0.0.1') throw new Error(`bench traffic goes to 127.0.0.1 only, not ${u}`);
  }
  let n = 0;
  const result = await autocannon({
    // autocannon spreads connections over several URLs (its README: "More than one URL is
    // allowed"); @types/autocannon only knows the single-string form.
    url: o.urls.map((u) => `${u}${o.traffic.path}`) as unknown as string,
    connections: o.connections,
    duration: o.durationS,
    ...(o.rate === undefined ? {} : { overallRate: o.rate }),
    pipelining: 1,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => {
          const d = o.traffic.request(n++, o.prefix);
          return { ...req, method: 'POST', body: d.body, headers: d.headers };
        },
      },
    ],
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = s.count ?? 0;
  const durationS = result.duration;
  return {
    sent: result.requests.sent,
    accepted: result['2xx'],
    refused: result.non2xx,
    errors: result.errors,
    durationS,
    acceptedPerS: result['2xx'] / durationS,
    ackP50Ms: result.latency.p50,
    ackP99Ms: result.latency.p99,
    statusCodes,
    inFlightAtEnd: Math.max(0, result.requests.sent - result['2xx'] - result.non2xx - result.errors),
  };
}
