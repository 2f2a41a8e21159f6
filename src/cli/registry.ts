/** Every `connectors` command (a registry: the one place that lists them). */
import type { Command } from './command.js';
import { devCommand } from './dev.js';
import { migrateCommand } from './migrate.js';
import { serveCommand } from './serve.js';
import { tenantsCreateCommand } from './tenants-create.js';
import { usersCreateCommand } from './users-create.js';

export const COMMANDS: Command[] = [serveCommand, migrateCommand, tenantsCreateCommand, usersCreateCommand, devCommand];
