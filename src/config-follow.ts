/**
 * Settings of following the graph (INTERFACE §10.1, §10.2): how long the change feed keeps
 * changes, and which webhook URLs are allowed (`dev` allows plain http and private addresses).
 */
import type { Env } from './config-env.js';

export interface FollowSettings {
  /** SERVICE_CHANGES_RETENTION_DAYS: changes are kept this long; an older cursor answers 410. */
  changesRetentionDays: number;
  webhooks: {
    /** SERVICE_WEBHOOKS_ALLOW_HTTP=1: `http://` URLs too (else `https://` only). */
    allowHttp: boolean;
    /** SERVICE_WEBHOOKS_ALLOW_PRIVATE=1: hosts on loopback, private, link-local or unspecified addresses too. */
    allowPrivate: boolean;
  };
}

type FollowEnv = Pick<
  Env,
  'SERVICE_CHANGES_RETENTION_DAYS' | 'SERVICE_WEBHOOKS_ALLOW_HTTP' | 'SERVICE_WEBHOOKS_ALLOW_PRIVATE'
>;

export function followSettings(e: FollowEnv): FollowSettings {
  return {
    changesRetentionDays: e.SERVICE_CHANGES_RETENTION_DAYS ?? 7,
    webhooks: {
      allowHttp: e.SERVICE_WEBHOOKS_ALLOW_HTTP === '1',
      allowPrivate: e.SERVICE_WEBHOOKS_ALLOW_PRIVATE === '1',
    },
  };
}
