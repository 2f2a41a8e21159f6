/**
 * Every module this build ships: the one place that lists them. A new connector goes in
 * connectorModules; a new service actor or route (one that is no connector's) goes in
 * serviceModules, built after the connectors with their drivers and the node's parts
 * (module.ts). Each module's actors are registered on every node, its routes mounted on
 * every edge, its `resumeShards` swept on every actor host (src/node.ts).
 */
import { chatappModule } from './chatapp.js';
import { codehostModule } from './codehost.js';
import { dataModule } from './data.js';
import { deadLettersModule } from './dead-letters.js';
import { housekeepingModule } from './housekeeping.js';
import { installModule } from './install.js';
import { webhooksModule } from './webhooks.js';
import type { ModuleFactory, ServiceModuleFactory } from './module.js';

export const connectorModules: ModuleFactory[] = [chatappModule, codehostModule];

export const serviceModules: ServiceModuleFactory[] = [
  installModule,
  deadLettersModule,
  housekeepingModule,
  webhooksModule,
  dataModule,
];
