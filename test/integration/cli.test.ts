import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { COMMANDS } from '../../src/cli/registry.js';
import { commandGroups } from '../../src/cli/usage.js';
import { runCli } from '../support/cli.js';
import { TEST_MASTER_KEY, testDatabaseUrl } from '../support/env.js';

const env = () => ({ DATABASE_URL: testDatabaseUrl(), SERVICE_MASTER_KEY: TEST_MASTER_KEY });

describe('connectors CLI', () => {
  it('creates a tenant (key shown once, only a hash stored) and a user', async () => {
    const t = await runCli(['tenants', 'create', '--name', 'Acme'], env());
    expect(t.code, t.stderr).toBe(0);
    const tenant = JSON.parse(t.stdout.trim()) as { tenant_id: string; api_key: string };
    expect(Object.keys(tenant).sort()).toEqual(['api_key', 'key_id', 'tenant_id']);
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    const { rows } = await client.query('SELECT key_hash FROM api_keys WHERE tenant_id = $1', [tenant.tenant_id]);
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0].key_hash).toString()).not.toContain(tenant.api_key);
    await client.end();

    const u = await runCli(['users', 'create', '--tenant', tenant.tenant_id, '--email', 'a@acme.test'], env());
    expect(u.code, u.stderr).toBe(0);
    expect(JSON.parse(u.stdout.trim())).toEqual({ user_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('migrate is idempotent and prints what it applied', async () => {
    const m = await runCli(['migrate'], { DATABASE_URL: testDatabaseUrl() });
    expect(m.code, m.stderr).toBe(0);
    expect(JSON.parse(m.stdout.trim())).toEqual({ applied: [] });
  });

  it.each([
    [['tenants', 'create'], '--name'],
    [['tenants', 'rename'], 'tenants'],
    [['users', 'create', '--tenant', 'nope', '--email', 'a@b.c'], '--tenant'],
    [['users', 'create', '--tenant', '00000000-0000-4000-8000-000000000000'], '--email'],
    [['frobnicate'], 'frobnicate'],
    [['serve', '--roles', 'edge,web'], '--roles'],
    [['tenants', 'create', '--name', 'x', '--colour', 'red'], 'colour'],
    [[], 'no command'],
    [['migrate', 'extra'], 'extra'],
    [['dev', '--sandbx'], 'sandbx'],
  ])('refuses %j: exit 2, a first stderr line naming %s, then the usage', async (args, naming) => {
    const r = await runCli(args, env());
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toContain(naming);
    expect(r.stderr).toContain('usage: connectors');
  });

  it('answers --version and --help (overall and per command) on stdout with exit 0', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const v = await runCli(['--version'], {});
    expect(v).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
    const all = await runCli(['--help'], {});
    expect(all.code).toBe(0);
    expect(all.stderr).toBe('');
    // The processes run side by side: each start costs seconds on a busy machine.
    const helps = await Promise.all(COMMANDS.map((c) => runCli([...c.name.split(' '), '--help'], {})));
    for (const [i, c] of COMMANDS.entries()) {
      expect(all.stdout).toContain(c.name);
      const h = helps[i]!;
      expect(h.code, c.name).toBe(0);
      expect(h.stderr).toBe('');
      expect(h.stdout).toContain(`usage: connectors ${c.name}`);
      for (const o of Object.keys(c.options)) expect(h.stdout).toContain(`--${o}`);
    }
    // --help wins over missing required flags: it needs no settings at all.
    expect((await runCli(['users', 'create', '--help'], {})).code).toBe(0);
  });

  it('answers <group> --help with the group usage and its subcommands, exit 0 (INTERFACE §9.1)', async () => {
    const groups = commandGroups(COMMANDS);
    expect(groups).toEqual(expect.arrayContaining(['tenants', 'users', 'api-keys', 'keys', 'dead-letters']));
    // The processes run side by side: each start costs seconds on a busy machine.
    const helps = await Promise.all(groups.map((group) => runCli([group, '--help'], {})));
    groups.forEach((group, i) => {
      const h = helps[i]!;
      expect(h.code, group).toBe(0);
      expect(h.stderr).toBe('');
      expect(h.stdout).toContain(`usage: connectors ${group} <subcommand>`);
      for (const c of COMMANDS.filter((c) => c.name.startsWith(`${group} `))) expect(h.stdout).toContain(c.name);
    });
    // A group without a subcommand, or with an unknown one: its usage on stderr, exit 2.
    const wrong = [['tenants'], ['api-keys', 'rotate']];
    const refused = await Promise.all(wrong.map((args) => runCli(args, {})));
    wrong.forEach((args, i) => {
      expect(refused[i]!.code, args.join(' ')).toBe(2);
      expect(refused[i]!.stdout).toBe('');
      expect(refused[i]!.stderr).toContain(`usage: connectors ${args[0]} <subcommand>`);
    });
  });

  it('names the bad setting and never prints its value', async () => {
    const r = await runCli(['tenants', 'create', '--name', 'x'], {
      DATABASE_URL: testDatabaseUrl(),
      SERVICE_MASTER_KEY: 'too-short-secret',
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('SERVICE_MASTER_KEY');
    expect(r.stderr).not.toContain('too-short-secret');
    const s = await runCli(['serve'], { SERVICE_MASTER_KEY: TEST_MASTER_KEY });
    expect(s.code).not.toBe(0);
    expect(s.stderr).toContain('DATABASE_URL');
  });

  it('users create for an unknown tenant fails clearly', async () => {
    const r = await runCli(
      ['users', 'create', '--tenant', '00000000-0000-4000-8000-000000000000', '--email', 'a@b.test'],
      env(),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('tenant');
  });
});
