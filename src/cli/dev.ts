import { runDev } from '../dev/run-dev.js';
import type { Command } from './command.js';

export const devCommand: Command = {
  name: 'dev',
  summary: 'everything on this machine with embedded Postgres and NATS; prints one JSON ready line',
  options: {},
  async run(_values, env) {
    await runDev(env);
  },
};
