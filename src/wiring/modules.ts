/** Every connector module this build ships (a registry: the one place that lists them). */
import { chatappModule } from './chatapp.js';
import { codehostModule } from './codehost.js';
import type { ModuleFactory } from './module.js';

export const MODULES: ModuleFactory[] = [chatappModule, codehostModule];
