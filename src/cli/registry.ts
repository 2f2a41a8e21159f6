/** Every `connectors` command (a registry: the one place that lists them). */
import type { Command } from './command.js';
import { apiKeysCreateCommand, apiKeysListCommand, apiKeysRevokeCommand } from './api-keys.js';
import { deadLettersListCommand, deadLettersReplayCommand } from './dead-letters.js';
import { devCommand } from './dev.js';
import { keysRotateCommand } from './keys.js';
import { migrateCommand } from './migrate.js';
import { serveCommand } from './serve.js';
import { tenantsCreateCommand } from './tenants-create.js';
import { tenantsDeleteCommand } from './tenants-delete.js';
import { usersCreateCommand } from './users-create.js';

export const COMMANDS: Command[] = [
  serveCommand,
  migrateCommand,
  tenantsCreateCommand,
  tenantsDeleteCommand,
  usersCreateCommand,
  apiKeysCreateCommand,
  apiKeysListCommand,
  apiKeysRevokeCommand,
  keysRotateCommand,
  deadLettersListCommand,
  deadLettersReplayCommand,
  devCommand,
];
