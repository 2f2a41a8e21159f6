import { UsageError, type Command } from './command.js';

export const devCommand: Command = {
  name: 'dev',
  summary: 'everything on this machine with embedded Postgres and NATS; prints one JSON ready line',
  options: {
    sandbox: {
      type: 'boolean',
      description: "also run the service's Slack, GitHub and indexer fakes with one seeded install of each connector",
    },
    'ready-file': {
      type: 'string',
      value: 'PATH',
      description: 'also write the ready line to PATH once ready (atomically; removed when dev stops)',
    },
  },
  async run(values, env) {
    const readyFile = values['ready-file'];
    if (readyFile === '') throw new UsageError('--ready-file needs a path', devCommand);
    const { runDev } = await import('../dev/run-dev.js');
    await runDev(env, {
      sandbox: values.sandbox === true,
      readyFile: typeof readyFile === 'string' ? readyFile : undefined,
    });
  },
};
