import { describe, expect, it } from 'vitest';
import { listConnectors } from '../../src/connectors/catalog.js';
import { loadConfig } from '../../src/config.js';

const CHAT = { CHATAPP_CLIENT_ID: 'id', CHATAPP_CLIENT_SECRET: 'secret', SERVICE_MASTER_KEY: 'k'.repeat(32) };
const chatOf = (env: Record<string, string>) =>
  listConnectors(loadConfig(env)).find((c) => c.connector_id === 'chatapp');

describe('unit: connector listing names the chat inbound transport', () => {
  it('http with a signing secret, socket with Socket Mode, none without either', () => {
    expect(chatOf({ ...CHAT, CHATAPP_SIGNING_SECRET: 's' })).toMatchObject({
      enabled: true,
      inbound_transport: 'http',
    });
    expect(
      chatOf({ ...CHAT, CHATAPP_SIGNING_SECRET: 's', CHATAPP_USE_SOCKET_MODE: 'true', CHATAPP_APP_TOKEN: 'xapp-1' }),
    ).toMatchObject({ inbound_transport: 'socket' });
    expect(chatOf(CHAT)).toMatchObject({ enabled: true, inbound_transport: 'none' });
    expect(listConnectors(loadConfig(CHAT)).find((c) => c.connector_id === 'codehost')).not.toHaveProperty(
      'inbound_transport',
    );
  });
});
