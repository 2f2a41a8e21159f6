/**
 * Settings that let a node start but leave a connector unable to do its work are said
 * once, at start (INTERFACE §8.12), instead of failing later without a word.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

export function warnIncompleteConnectors(config: Readonly<Config>, log: Logger): void {
  if (config.chatapp.enabled && config.chatapp.transport === 'none') {
    // Installs and backfill work without one, but no live event would ever arrive.
    log.warn(
      { settings: ['CHATAPP_SIGNING_SECRET', 'CHATAPP_USE_SOCKET_MODE + CHATAPP_APP_TOKEN'] },
      'the chat connector has no inbound transport: set CHATAPP_SIGNING_SECRET (HTTP events) or Socket Mode, ' +
        'or installs will never receive live events',
    );
  }
  if (config.codehost.enabledFlag && config.codehost.missing.length > 0) {
    // INTERFACE §8.12: start, answer 501 on the webhook route, and say what is missing.
    log.warn(
      { missing: config.codehost.missing },
      'CODEHOST_CONNECTOR_ENABLED=true but settings are missing; the code-host connector stays off',
    );
  }
}
