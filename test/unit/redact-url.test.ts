/** No server name in a log line or error keeps the credentials its URL carried (runtime/nats-connect.ts). */
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/runtime/nats-connect.js';

describe('redactUrl', () => {
  it('drops the user and password, whatever characters the password holds', () => {
    expect(redactUrl('nats://user:secret@127.0.0.1:4222')).toBe('nats://127.0.0.1:4222');
    expect(redactUrl('user:secret@host:4222')).toBe('host:4222');
    // An unencoded "@" or "/" in the password: the server is after the last "@".
    expect(redactUrl('nats://user:p@ss@host:4222')).toBe('nats://host:4222');
    expect(redactUrl('tls://user:pa/ss@host:4222')).toBe('tls://host:4222');
    expect(redactUrl('user:p@ss@host:4222')).toBe('host:4222');
  });

  it('leaves a URL without credentials as it is', () => {
    expect(redactUrl('nats://127.0.0.1:4222')).toBe('nats://127.0.0.1:4222');
    expect(redactUrl('host:4222')).toBe('host:4222');
  });
});
