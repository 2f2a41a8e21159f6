/** Every connector module this build ships (a registry: the one place that lists them). */
import { chatappModule } from './chatapp/module.js';
import { codehostModule } from './codehost/module.js';
import type { ModuleFactory } from './module.js';

export const MODULES: ModuleFactory[] = [chatappModule, codehostModule];
