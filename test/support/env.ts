/** Per-run test environment (see test/global-setup.ts). */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

export const testDatabaseUrl = (): string => inject('databaseUrl');
export const testAdminDatabaseUrl = (): string => inject('adminDatabaseUrl');
/** The run's nodes' login (a member of connectors_app); its tenant login is `tenantRoleUrl` of it. */
export const testAppDatabaseUrl = (): string => inject('appDatabaseUrl');
export const testNatsUrl = (): string => inject('natsUrl');

/** A SERVICE_NAMESPACE nobody else uses: one per test (or per describe) for NATS isolation. */
export function freshNamespace(label = 'x'): string {
  return `${inject('runId')}_${label}_${randomBytes(3).toString('hex')}`.slice(0, 32);
}

/** A master key for tests (>= 32 bytes). */
export const TEST_MASTER_KEY = 'test-master-key-0123456789abcdef-0123456789';
