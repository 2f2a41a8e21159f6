/** Pure parts of the security fences: the tenant rate, the NATS seal, the new settings. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createTenantRate } from '../../src/edge/tenant-rate.js';
import { createSeal } from '../../src/runtime/seal.js';
import { tenantRolePassword, tenantRoleUrl } from '../../src/store/tenant-role.js';
import { TEST_MASTER_KEY } from '../support/env.js';

describe('tenant rate (INTERFACE §9.2)', () => {
  it('allows a burst of twice the rate, then one request per interval, per tenant', () => {
    let now = 1_000_000;
    const rate = createTenantRate(5, () => now);
    const taken = Array.from({ length: 12 }, () => rate.take('a').ok);
    expect(taken.filter(Boolean)).toHaveLength(10);
    const refused = rate.take('a');
    expect(refused.ok).toBe(false);
    expect(refused.ok === false && refused.retryAfterMs).toBeCloseTo(200, 5);
    // Another tenant has its own allowance.
    expect(rate.take('b').ok).toBe(true);
    now += 200;
    expect(rate.take('a').ok).toBe(true);
    expect(rate.take('a').ok).toBe(false);
    // A full refill after two seconds of quiet, never more than the burst.
    now += 10_000;
    expect(Array.from({ length: 12 }, () => rate.take('a').ok).filter(Boolean)).toHaveLength(10);
  });
});

describe('NATS seal (INTERFACE §9.4)', () => {
  const body = new TextEncoder().encode('{"type":"event"}');
  it('verifies its own seal and previous keys, refuses tampering and other keys', () => {
    const k1 = createSeal([TEST_MASTER_KEY]);
    const rotated = createSeal([`${TEST_MASTER_KEY}-2`, TEST_MASTER_KEY]);
    const seal = k1.sign(body);
    expect(k1.verify(body, seal)).toBe(true);
    expect(rotated.verify(body, seal)).toBe(true);
    // Issue 32: a rolled node seals under both keys, so a node still on K1 accepts it, and so
    // does a node already on K2 alone; a seal under another deployment's key alone does not pass.
    expect(k1.verify(body, rotated.sign(body))).toBe(true);
    expect(createSeal([`${TEST_MASTER_KEY}-2`]).verify(body, rotated.sign(body))).toBe(true);
    expect(k1.verify(body, createSeal([`${TEST_MASTER_KEY}-2`]).sign(body))).toBe(false);
    expect(rotated.sign(body).split(',')).toHaveLength(2);
    expect(k1.verify(body, `${'A'.repeat(43)},${seal}`)).toBe(true);
    expect(k1.verify(body, `${'A'.repeat(43)},${'B'.repeat(43)}`)).toBe(false);
    expect(k1.verify(new TextEncoder().encode('{"type":"evenT"}'), seal)).toBe(false);
    for (const bad of [null, undefined, '', 'x', `${seal.slice(0, -1)}A`]) expect(k1.verify(body, bad)).toBe(false);
    expect(k1.headers(body).get('Svc-Seal')).toBe(seal);
  });
});

describe('security settings', () => {
  const base = { SERVICE_MASTER_KEY: TEST_MASTER_KEY };
  it('reads them, with defaults', () => {
    const c = loadConfig(base);
    expect(c.security).toEqual({
      previousMasterKeys: [],
      tenantRatePerS: 50,
      metricsPort: null,
      migrateDatabaseUrl: null,
    });
    const d = loadConfig({
      ...base,
      SERVICE_MASTER_KEY_PREVIOUS: ` old-master-key-0123456789abcdef-0123 ,${TEST_MASTER_KEY}`,
      SERVICE_TENANT_RATE_PER_S: '7',
      SERVICE_METRICS_PORT: '9100',
      DATABASE_MIGRATE_URL: 'postgres://owner@db/x',
    });
    // The current key is not "previous"; blanks are trimmed.
    expect(d.security).toEqual({
      previousMasterKeys: ['old-master-key-0123456789abcdef-0123'],
      tenantRatePerS: 7,
      metricsPort: 9100,
      migrateDatabaseUrl: 'postgres://owner@db/x',
    });
  });

  it.each([
    [{ SERVICE_MASTER_KEY_PREVIOUS: 'short' }, 'SERVICE_MASTER_KEY_PREVIOUS'],
    [{ SERVICE_TENANT_RATE_PER_S: '0' }, 'SERVICE_TENANT_RATE_PER_S'],
    [{ SERVICE_METRICS_PORT: '8080' }, 'SERVICE_METRICS_PORT'],
    [{ DATABASE_MIGRATE_URL: 'mysql://x' }, 'DATABASE_MIGRATE_URL'],
  ])('refuses %j naming the setting, never its value', (env, setting) => {
    let caught: unknown;
    try {
      loadConfig({ ...base, ...env });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).setting).toBe(setting);
    expect((caught as Error).message).not.toContain('short');
  });
});

describe('the tenant login derived from DATABASE_URL (migration 013)', () => {
  it('keeps host and database, appends _tenant, and hashes the decoded password one way', () => {
    const url = new URL(
      tenantRoleUrl('postgres://connectors_serve:p%40ss%20w%C3%B6rd@db.example:5433/connectors?sslmode=require'),
    );
    expect(url.username).toBe('connectors_serve_tenant');
    expect(url.host).toBe('db.example:5433');
    expect(url.pathname).toBe('/connectors');
    expect(url.searchParams.get('sslmode')).toBe('require');
    // The same value deploy/postgres/init-roles.sh computes with sha256(convert_to(pw || ':tenant')).
    const expected = createHash('sha256').update('p@ss wörd:tenant', 'utf8').digest('hex');
    expect(url.password).toBe(expected);
    expect(tenantRolePassword('p@ss wörd')).toBe(expected);
    expect(url.password).not.toContain('p%40ss');
    // Trust or peer auth: no password, none derived.
    expect(new URL(tenantRoleUrl('postgres://app@127.0.0.1/x')).password).toBe('');
    expect(() => tenantRoleUrl('postgres://127.0.0.1/x')).toThrow(expect.objectContaining({ code: 'internal' }));
  });
});
