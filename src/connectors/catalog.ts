/**
 * The connector listing (spec §4 `GET /api/v1/connectors`, INTERFACE §3). `enabled`
 * reflects settings; `install_path` is exposed where the connector does not use the
 * framework's default OAuth start (spec §4: clients prefer it over the auth_mode default).
 */
import type { Config } from '../config.js';
import type { ConnectorId } from '../store/installs.js';

export interface ConnectorManifest {
  connector_id: ConnectorId;
  display_name: string;
  auth_mode: 'oauth2' | 'app_install';
  enabled: boolean;
  install_path?: string;
  /** chatapp: how live events arrive (`http`, `socket`), or `none`: installs then only ever get their backfill. */
  inbound_transport?: 'http' | 'socket' | 'none';
}

const CODEHOST_INSTALL_PATH = '/api/v1/connectors/codehost/admin/install';

export function listConnectors(config: Readonly<Config>): ConnectorManifest[] {
  return [
    {
      connector_id: 'chatapp',
      display_name: 'Chat workspace',
      auth_mode: 'oauth2',
      enabled: config.chatapp.enabled,
      inbound_transport: config.chatapp.transport,
    },
    {
      connector_id: 'codehost',
      display_name: 'Code host App',
      auth_mode: 'app_install',
      enabled: config.codehost.enabled,
      install_path: CODEHOST_INSTALL_PATH,
    },
  ];
}
