import { runDev } from '../dev/run-dev.js';
import type { Command } from './command.js';

export const devCommand: Command = {
  name: 'dev',
  summary: 'everything on this machine with embedded Postgres and NATS; prints one JSON ready line',
  options: {
    sandbox: {
      type: 'boolean',
      description: "also run the service's Slack, GitHub and indexer fakes with one seeded install of each connector",
    },
  },
  async run(values, env) {
    await runDev(env, { sandbox: values.sandbox === true });
  },
};
