/** A throwaway CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCerts {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'nats-tls-'));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=test-ca',
    '-keyout',
    f('ca-key.pem'),
    '-out',
    f('ca.pem'),
  );
  const leaf = (name: string, ext: string) => {
    writeFileSync(f(`${name}.ext`), ext);
    ssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      f(`${name}-key.pem`),
      '-out',
      f(`${name}.csr`),
    );
    ssl(
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca-key.pem'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      f(`${name}.ext`),
      '-out',
      f(`${name}.pem`),
    );
  };
  leaf('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    ca: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server-key.pem'),
    clientCert: f('client.pem'),
    clientKey: f('client-key.pem'),
  };
}
