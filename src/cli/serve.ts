import type { Role } from '../node.js';
import { UsageError, type Command } from './command.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run one node (applies migrations first); stops on SIGINT/SIGTERM',
  options: {
    roles: { type: 'string', value: 'edge,actors', description: 'roles of this node (default: both)' },
  },
  async run(values, env) {
    const roles = parseRoles((values.roles as string | undefined) ?? 'edge,actors');
    const [{ loadConfig }, { createLogger }, { limitHeapGrowth }, { startNode }, { stopSignal }, { tracingOn }] =
      await Promise.all([
        import('../config.js'),
        import('../log.js'),
        import('../node/heap-growth.js'),
        import('../node.js'),
        import('../signals.js'),
        import('../telemetry/tracing.js'),
      ]);
    const config = loadConfig(env, { requireDatabase: true, requireMasterKey: true });
    const heapGrowingPercent = limitHeapGrowth(config.heapGrowingPercent);
    const log = createLogger({ level: config.logLevel, node: config.nodeId });
    if (heapGrowingPercent !== null) log.info({ heapGrowingPercent }, 'V8 old generation grows by a fixed factor');
    if (config.tracing.exporter !== 'none' && !tracingOn()) {
      // The SDK starts in bin/connectors.js before the service's modules load (telemetry/preload.ts).
      log.warn('OTEL_TRACES_EXPORTER asks for traces, but tracing starts only when run through bin/connectors.js');
    }
    const stop = stopSignal();
    const node = await startNode(config, { roles, log });
    await stop;
    await node.stop();
  },
};

function parseRoles(v: string): Role[] {
  const roles = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (roles.length === 0 || roles.some((r) => r !== 'edge' && r !== 'actors')) {
    throw new UsageError('--roles must be a comma-separated list of edge, actors', serveCommand);
  }
  return [...new Set(roles)] as Role[];
}
