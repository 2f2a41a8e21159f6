/**
 * One real node in its own OS process, for the chat backfill kill -9 test: settings come
 * from the environment (as `serve` takes them); it prints `{"url"}` on stdout once ready.
 * Run with `node --import tsx`, so SIGKILL reaches the node itself and nothing runs after.
 */
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { startNode } from '../../src/node.js';

const config = loadConfig(process.env, { requireDatabase: true, requireMasterKey: true });
const node = await startNode(config, {
  roles: ['edge', 'actors'],
  log: pino({ level: config.logLevel }, pino.destination(2)),
});
process.stdout.write(`${JSON.stringify({ url: node.url })}\n`);
