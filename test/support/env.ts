/** Per-run test environment (see test/global-setup.ts), and the file's own database (file-database.ts). */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { FileDatabase } from './file-database.js';

let fileDatabase: FileDatabase | null = null;
/** Set once per file by test/support/file-setup.ts, before the file's tests are collected. */
export function useFileDatabase(db: FileDatabase): void {
  fileDatabase = db;
}

export const testDatabaseUrl = (): string => fileDatabase?.url ?? inject('databaseUrl');
export const testAdminDatabaseUrl = (): string => inject('adminDatabaseUrl');
/** The run's nodes' login (a member of connectors_app); its tenant login is `tenantRoleUrl` of it. */
export const testAppDatabaseUrl = (): string => fileDatabase?.appUrl ?? inject('appDatabaseUrl');
export const testNatsUrl = (): string => inject('natsUrl');

/** A SERVICE_NAMESPACE nobody else uses: one per test (or per describe) for NATS isolation. */
export function freshNamespace(label = 'x'): string {
  return `${inject('runId')}_${label}_${randomBytes(3).toString('hex')}`.slice(0, 32);
}

/** A master key for tests (>= 32 bytes). */
export const TEST_MASTER_KEY = 'test-master-key-0123456789abcdef-0123456789';
