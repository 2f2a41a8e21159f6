/**
 * Which webhook URLs the service calls (INTERFACE §10.2, src/webhook-url.ts): the SSRF table
 * of issue 30 refused without SERVICE_WEBHOOKS_ALLOW_PRIVATE, whether written as an address or
 * reached through a name (the resolver is injected: a name resolving to 127.0.0.1), allowed
 * with it; https only unless SERVICE_WEBHOOKS_ALLOW_HTTP; the address checked is the one
 * returned for the connection.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { checkWebhookUrl, isPrivateAddress, type Resolver } from '../../src/webhook-url.js';

const strict = { allowHttp: false, allowPrivate: false };
const names: Record<string, Array<{ address: string; family: 4 | 6 }>> = {
  'public.example': [{ address: '93.184.215.14', family: 4 }],
  'loopback.example': [{ address: '127.0.0.1', family: 4 }],
  'mixed.example': [
    { address: '93.184.215.14', family: 4 },
    { address: '10.1.2.3', family: 4 },
  ],
};
const resolve: Resolver = async (host) => {
  const found = names[host];
  if (!found) throw new Error('ENOTFOUND');
  return found;
};

async function refusal(url: string, policy = strict): Promise<string | null> {
  try {
    await checkWebhookUrl(url, policy, resolve);
    return null;
  } catch (err) {
    return err instanceof AppError ? err.code : 'thrown';
  }
}

describe('webhook URL check', () => {
  const table = [
    'https://127.0.0.1/',
    'https://127.9.9.9/',
    'https://[::1]/',
    'https://10.0.0.1/',
    'https://172.16.0.1/',
    'https://172.31.255.255/',
    'https://192.168.1.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://0.0.0.0/',
    'https://[::]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[fe80::1]/',
    'https://[fd00::1]/',
    'https://loopback.example/',
    'https://mixed.example/',
  ];
  it.each(table)('refuses %s as bad_config without the allow setting, and takes it with it', async (url) => {
    expect(await refusal(url)).toBe('bad_config');
    expect(await refusal(url, { allowHttp: false, allowPrivate: true })).toBeNull();
  });

  it('takes a public https URL, connecting to the address the name resolved to', async () => {
    const got = await checkWebhookUrl('https://public.example/hooks?x=1', strict, resolve);
    expect(got.address).toEqual({ address: '93.184.215.14', family: 4 });
    expect(got.url.pathname).toBe('/hooks');
    expect(await refusal('https://172.32.0.1/')).toBeNull();
  });

  it('takes http only with SERVICE_WEBHOOKS_ALLOW_HTTP, never other schemes, user info or unknown names', async () => {
    expect(await refusal('http://public.example/')).toBe('bad_config');
    expect(await refusal('http://public.example/', { allowHttp: true, allowPrivate: false })).toBeNull();
    expect(await refusal('ftp://public.example/', { allowHttp: true, allowPrivate: true })).toBe('bad_config');
    expect(await refusal('https://u:p@public.example/')).toBe('bad_config');
    expect(await refusal('https://nowhere.example/')).toBe('bad_config');
  });

  it('classes addresses', () => {
    expect(['100.64.0.1', '224.0.0.1', '255.255.255.255', '64:ff9b::7f00:1'].map(isPrivateAddress)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['8.8.8.8', '2001:4860:4860::8888'].map(isPrivateAddress)).toEqual([false, false]);
  });
});
