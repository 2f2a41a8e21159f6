/**
 * A node's HTTP listeners besides the edge: on a node without the edge (`serve --roles
 * actors`), the ops routes alone on PORT (`/healthz`, `/readyz`, `/metrics`: README "Operating
 * it" has every node probed and scraped); and SERVICE_METRICS_PORT's `/metrics`-only listener
 * wherever it is set.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { ReadinessCheck } from '../edge/context.js';
import { serveOps } from '../edge/routes/ops.js';

export interface OpsListeners {
  /** The ops routes' URL on a node without the edge; null where the edge serves them. */
  url: string | null;
  close(): Promise<void>;
}

export async function startOpsListeners(
  config: Readonly<Config>,
  registry: Registry,
  opts: { hasEdge: boolean; ready: ReadinessCheck },
): Promise<OpsListeners> {
  const { host, port } = config;
  const metricsPort = config.security.metricsPort;
  const ops = opts.hasEdge
    ? null
    : await serveOps(registry, { host, port, ready: opts.ready, metrics: metricsPort === null });
  try {
    const metrics =
      metricsPort === null ? null : await serveOps(registry, { host, port: metricsPort, ready: null, metrics: true });
    return {
      url: ops?.url ?? null,
      close: async () => {
        await ops?.close();
        await metrics?.close();
      },
    };
  } catch (err) {
    await ops?.close();
    throw err;
  }
}
