/**
 * The shipped deployment files against the service's own settings: every node gets what
 * `serve` requires, the values given pass `loadConfig` exactly as `serve` runs it, the
 * Secret template names every secret setting (and the ConfigMap none), and the probes,
 * shutdown timing and image match what the service answers and needs.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig, SECRET_SETTINGS } from '../../src/config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REQUIRED_BY_SERVE = ['DATABASE_URL', 'NATS_URL', 'SERVICE_MASTER_KEY', 'SERVICE_NAMESPACE'];
const SERVE = { requireDatabase: true, requireMasterKey: true };
const SAMPLE_MASTER_KEY = 'a-sample-master-key-of-more-than-32-bytes';

type Env = Record<string, string>;
/** Parsed YAML, checked field by field below. */
type Doc = any;

const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');

/** deploy/nats/connectors-account.conf: its user and the subjects it may publish and subscribe to. */
const account = (() => {
  const text = read('deploy/nats/connectors-account.conf');
  const quoted = (from: string, to?: string) => {
    const part = text.slice(text.indexOf(from), to ? text.indexOf(to) : undefined);
    return [...part.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
  };
  return {
    text,
    user: /user: (\S+)/.exec(text)?.[1],
    publish: quoted('publish:', 'subscribe:'),
    subscribe: quoted('subscribe:'),
  };
})();

describe('docker-compose.yml', () => {
  const compose: Doc = parse(read('docker-compose.yml'), { merge: true });
  const services: Record<string, Doc> = compose.services;
  const nodes = Object.entries(services).filter(([, s]) => JSON.stringify(s.command) === '["serve"]');

  /** Compose interpolation as `docker compose` does it, with `.env` holding `dotEnv`. */
  const interpolate = (value: string, dotEnv: Env) =>
    value.replace(/\$\{([A-Z0-9_]+)(?::([?-])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
      const v = dotEnv[name];
      if (v !== undefined && v !== '') return v;
      if (op === '?') throw new Error(`required: ${name}`);
      return op === '-' ? (arg ?? '') : '';
    });
  const envOf = (service: Doc, dotEnv: Env): Env =>
    Object.fromEntries(Object.entries(service.environment as Env).map(([k, v]) => [k, interpolate(String(v), dotEnv)]));
  const dotEnv: Env = { POSTGRES_PASSWORD: 'pw', SERVICE_MASTER_KEY: SAMPLE_MASTER_KEY, NATS_PASSWORD: 'np' };

  it('runs two serve nodes with distinct ids on ports 8080 and 8081', () => {
    expect(nodes.map(([name]) => name)).toEqual(['node-1', 'node-2']);
    expect(nodes.map(([, s]) => s.environment.NODE_ID)).toEqual(['node-1', 'node-2']);
    expect(nodes.map(([, s]) => s.ports)).toEqual([['8080:8080'], ['8081:8080']]);
  });

  it('gives every node the settings serve requires, valid for loadConfig, pointing at the compose services', () => {
    for (const [, node] of nodes) {
      const env = envOf(node, dotEnv);
      for (const key of REQUIRED_BY_SERVE) expect(env[key], key).toBeTruthy();
      const config = loadConfig(env, SERVE);
      expect(config.host).toBe('0.0.0.0');
      expect(new URL(config.databaseUrl!).hostname).toBe('postgres');
      expect(config.natsServers).toEqual(['nats://nats:4222']);
      expect(services.postgres.image).toMatch(/^postgres:/);
      expect(services.nats.image).toMatch(/^nats:/);
      expect(node.depends_on.migrate.condition).toBe('service_completed_successfully');
    }
  });

  it('takes secrets from .env, refusing to start without the required ones', () => {
    for (const [, node] of nodes) {
      for (const key of SECRET_SETTINGS) expect(String(node.environment[key]), key).toContain('${');
      expect(node.environment.SERVICE_MASTER_KEY).toMatch(/^\$\{SERVICE_MASTER_KEY:\?/);
      expect(() => envOf(node, { ...dotEnv, SERVICE_MASTER_KEY: '' })).toThrow(/SERVICE_MASTER_KEY/);
      expect(() => envOf(node, { ...dotEnv, POSTGRES_PASSWORD: '' })).toThrow(/POSTGRES_PASSWORD/);
      expect(() => envOf(node, { ...dotEnv, NATS_PASSWORD: '' })).toThrow(/NATS_PASSWORD/);
    }
  });

  it('runs NATS with JetStream on a volume, Postgres on a volume, and a one-shot migrate', () => {
    const nats = services.nats;
    expect(nats.command).toContain('-js');
    const sd = nats.command[nats.command.indexOf('-sd') + 1];
    expect(nats.volumes.map((v: string) => v.split(':')[1])).toContain(sd);
    expect(Object.keys(compose.volumes)).toEqual(expect.arrayContaining(['nats-data', 'postgres-data']));
    expect(services.postgres.volumes[0]).toMatch(/^postgres-data:/);
    expect(services.migrate.command).toEqual(['migrate']);
    expect(services.migrate.restart).toBe('no');
    expect(() => loadConfig(envOf(services.migrate, dotEnv), { requireDatabase: true })).not.toThrow();
  });

  it('runs NATS with the account file, and every node authenticates as its user (INTERFACE §9.2)', () => {
    const nats = services.nats;
    const conf = nats.command[nats.command.indexOf('-c') + 1];
    const mounted = (file: string) => nats.volumes.find((v: string) => v.startsWith(`./deploy/nats/${file}:`));
    expect(mounted('nats.conf')).toBe(`./deploy/nats/nats.conf:${conf}:ro`);
    // nats-server resolves an include relative to the including file.
    expect(read('deploy/nats/nats.conf')).toMatch(/^include \.\/connectors-account\.conf$/m);
    expect(mounted('connectors-account.conf')).toBe(
      `./deploy/nats/connectors-account.conf:${conf.replace(/[^/]+$/, 'connectors-account.conf')}:ro`,
    );
    expect(account.text).toMatch(/password: \$CONNECTORS_NATS_PASSWORD/);
    expect(envOf(nats, dotEnv).CONNECTORS_NATS_PASSWORD).toBe('np');
    for (const [, node] of nodes) {
      const config = loadConfig(envOf(node, dotEnv), SERVE);
      expect(account.user).toBe(config.nats.user);
      expect(config.nats.password).toBe('np');
      // The account's permissions stop at its namespace.
      expect(account.publish).toContain(`${config.namespace}.>`);
      expect(account.publish).toContain(`$JS.API.STREAM.*.${config.namespace}_INGEST`);
    }
  });
});

describe('deploy/k8s', () => {
  const dir = join(ROOT, 'deploy', 'k8s');
  const docs: Doc[] = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => {
        expect(d.errors, f).toEqual([]);
        return d.toJS();
      }),
    )
    .filter(Boolean);
  const one = (kind: string, name?: string): Doc => {
    const found = docs.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
    expect(found, `${kind} ${name ?? ''}`).toHaveLength(1);
    return found[0];
  };
  const secret = one('Secret', 'connectors-secrets');
  const configMap = one('ConfigMap', 'connectors-config');
  const deployment = one('Deployment');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];

  /** The container's environment: its envFrom sources (resolved here) and its own env. */
  const envOf = (c: Doc, secretValues: Env): Env => {
    const env: Env = {};
    for (const from of c.envFrom ?? []) {
      if (from.secretRef) {
        expect(from.secretRef.name).toBe(secret.metadata.name);
        Object.assign(env, secretValues);
      }
      if (from.configMapRef) {
        expect(from.configMapRef.name).toBe(configMap.metadata.name);
        Object.assign(env, configMap.data);
      }
    }
    for (const e of c.env ?? []) env[e.name] = e.value ?? (e.valueFrom?.fieldRef ? 'pod-name-0' : '');
    return env;
  };
  // The template's placeholders are deliberately unusable; an operator's real values are not.
  const filledSecret: Env = {
    ...secret.stringData,
    DATABASE_URL: 'postgres://connectors:pw@connectors-db-rw:5432/connectors',
    SERVICE_MASTER_KEY: SAMPLE_MASTER_KEY,
    NATS_PASSWORD: 'np',
  };

  it('authenticates to the 3-node NATS of deploy/nats-values.yaml with 3 replicas (INTERFACE §9.2)', () => {
    const values: Doc = parse(read('deploy/nats-values.yaml'));
    const config = loadConfig(envOf(container, filledSecret), SERVE);
    expect(values.config.cluster.replicas).toBe(3);
    expect(config.nats.replicas).toBe(values.config.cluster.replicas);
    expect(values.config.jetstream.enabled).toBe(true);
    // The same account as deploy/nats/connectors-account.conf: user, JetStream, permissions.
    const acct = values.config.merge.accounts.CONNECTORS;
    expect(acct.jetstream).toBe('enabled');
    expect(acct.users.map((u: Doc) => u.user)).toEqual([config.nats.user]);
    expect(account.user).toBe(config.nats.user);
    const perms = acct.users[0].permissions;
    expect(perms.publish.allow).toEqual(account.publish);
    expect(perms.subscribe.allow).toEqual(account.subscribe);
    expect(perms.allow_responses).toBe(true);
    expect(acct.users[0].password).toMatch(/^<< \$[A-Z_]+ >>$/);
    expect(config.nats.password).toBe('np');
  });

  it('the Secret template names every secret setting, with placeholders only', () => {
    expect(secret.data).toBeUndefined();
    expect(Object.keys(secret.stringData).sort()).toEqual([...SECRET_SETTINGS].sort());
    for (const [k, v] of Object.entries<string>(secret.stringData))
      expect(v === '' || v.includes('CHANGE-ME'), k).toBe(true);
    // Unedited, it stops the service at start instead of running with a known key.
    expect(() => loadConfig({ ...configMap.data, ...secret.stringData }, SERVE)).toThrow(/SERVICE_MASTER_KEY/);
  });

  it('the ConfigMap holds no secret setting', () => {
    for (const key of SECRET_SETTINGS) expect(configMap.data, key).not.toHaveProperty(key);
  });

  it('the Deployment gives serve every setting it requires, valid for loadConfig', () => {
    expect(container.args).toEqual(['serve']);
    const env = envOf(container, filledSecret);
    for (const key of [...REQUIRED_BY_SERVE, 'NODE_ID']) expect(env[key], key).toBeTruthy();
    const config = loadConfig(env, SERVE);
    expect(config.host).toBe('0.0.0.0');
    expect(container.ports.map((p: Doc) => p.containerPort)).toContain(config.port);
  });

  it('runs 2+ replicas with readiness on /readyz, liveness on /healthz, and time to drain', () => {
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    const portName = container.ports[0].name;
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: portName });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: portName });
    const preStop = container.lifecycle.preStop.exec.command as string[];
    expect(preStop[0]).toBe('sleep');
    const grace = pod.terminationGracePeriodSeconds as number;
    expect(grace).toBeGreaterThanOrEqual(25);
    expect(grace - Number(preStop[1])).toBeGreaterThanOrEqual(20);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
  });

  it('the Service, PodDisruptionBudget and pods select the same labels', () => {
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    const service = one('Service');
    expect(service.spec.selector).toEqual(labels);
    expect(service.spec.ports[0].targetPort).toBe(container.ports[0].name);
    const pdb = one('PodDisruptionBudget');
    expect(pdb.spec.selector.matchLabels).toEqual(labels);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('the Ingress routes the API, docs and webhooks to the Service; the ServiceMonitor scrapes its pods', () => {
    const service = one('Service');
    const ingress = one('Ingress');
    const paths = ingress.spec.rules.flatMap((r: Doc) => r.http.paths);
    expect(paths.map((p: Doc) => p.path)).toEqual(expect.arrayContaining(['/api/', '/docs', '/openapi.json']));
    for (const p of paths) {
      expect(p.backend.service.name).toBe(service.metadata.name);
      expect(service.spec.ports.map((sp: Doc) => sp.name)).toContain(p.backend.service.port.name);
    }
    const monitor = one('ServiceMonitor');
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) expect(service.metadata.labels[k]).toBe(v);
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: service.spec.ports[0].name, path: '/metrics' });
    const scrape = parseAllDocuments(read('deploy/prometheus/scrape-config.yaml'))[0]!.toJS();
    expect(scrape.scrape_configs[0].metrics_path).toBe('/metrics');
  });

  it('the migrate Job runs `migrate` with the same settings', () => {
    const job = one('Job');
    const c = job.spec.template.spec.containers[0];
    expect(c.args).toEqual(['migrate']);
    expect(c.image).toBe(container.image);
    expect(job.spec.template.spec.restartPolicy).not.toBe('Always');
    expect(() => loadConfig(envOf(c, filledSecret), { requireDatabase: true })).not.toThrow();
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const all = (word: string) =>
    instructions.filter((l) => l.startsWith(`${word} `)).map((l) => l.slice(word.length + 1));
  const last = (word: string) => all(word).at(-1);

  it('builds on node:20 in every stage', () => {
    const bases = all('FROM').map((f) => f.split(/\s+/)[0]!);
    expect(bases.length).toBeGreaterThanOrEqual(2);
    for (const base of bases) expect(base).toMatch(/^node:20[-.]/);
  });

  it('runs the CLI as a non-root user, serve by default, health-checked on /healthz', () => {
    expect(JSON.parse(last('ENTRYPOINT')!)).toEqual(['node', 'bin/connectors.js']);
    expect(JSON.parse(last('CMD')!)).toEqual(['serve']);
    expect(last('USER')).toMatch(/^(?!root$|0$)\S+$/);
    expect(last('HEALTHCHECK')).toContain('/healthz');
    expect(all('RUN').some((r) => r.startsWith('npm ci'))).toBe(true);
    expect(all('RUN').some((r) => r.includes('npm run build'))).toBe(true);
    // The server's default host is loopback, unreachable from outside the container.
    expect(last('ENV')).toMatch(/HOST=0\.0\.0\.0/);
  });
});

describe('deploy/postgres/init-roles.sh', () => {
  // A psql stand-in that records what the real one would be given: its arguments (what `ps`
  // shows), the password in its environment (what `\getenv` reads), and the SQL on stdin.
  const run = (env: Env, stdin: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'init-roles-'));
    try {
      const psql = join(dir, 'psql');
      writeFileSync(
        psql,
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$OUT/argv"\nprintf "%s" "$CONNECTORS_INIT_PASSWORD" > "$OUT/env"\n' +
          'cat > "$OUT/stdin"\n',
      );
      chmodSync(psql, 0o755);
      const r = spawnSync('sh', [join(ROOT, 'deploy/postgres/init-roles.sh')], {
        env: { PATH: `${dir}:${process.env.PATH}`, OUT: dir, ...env },
        input: stdin,
        encoding: 'utf8',
      });
      const file = (name: string) => readFileSync(join(dir, name), 'utf8');
      return r.status === 0 ? { argv: file('argv'), env: file('env'), sql: file('stdin') } : { failed: r.stderr };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const PASSWORD = "pw-'quoted' $(id) secret";

  it('hands psql the password through its environment, never its arguments (32 item 8)', () => {
    for (const env of [{ CONNECTORS_SERVE_PASSWORD: PASSWORD }, { POSTGRES_PASSWORD: PASSWORD }] as Env[]) {
      const r = run(env, '');
      expect(r, Object.keys(env)[0]).toMatchObject({ env: PASSWORD });
      if (!('argv' in r)) continue;
      expect(r.argv).not.toContain('secret');
      expect(r.sql).not.toContain('secret');
      expect(r.sql).toMatch(/^\\getenv pw CONNECTORS_INIT_PASSWORD$/m);
      expect(r.sql).toContain("ALTER ROLE connectors_serve PASSWORD :'pw'");
      expect(r.sql).toContain('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC');
    }
  });

  it('reads the password from stdin when the environment has none, and refuses to run without one', () => {
    const r = run({}, `${PASSWORD}\n`);
    expect(r).toMatchObject({ env: PASSWORD });
    expect('argv' in r && r.argv).not.toContain('secret');
    expect(run({}, '')).toMatchObject({ failed: expect.stringContaining('CONNECTORS_SERVE_PASSWORD') });
  });
});
