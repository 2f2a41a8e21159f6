/**
 * Which webhook URLs the service will call (INTERFACE §10.2): `https://` (or `http://` with
 * SERVICE_WEBHOOKS_ALLOW_HTTP=1), no user info, and a host that neither is nor resolves to a
 * loopback, private, link-local or unspecified address (nor multicast or reserved) unless
 * SERVICE_WEBHOOKS_ALLOW_PRIVATE=1. Checked when a webhook is created or changed, and again
 * at every delivery, which then connects to the very address checked here (no second DNS
 * answer between the check and the connection: post-delivery.ts).
 *
 * Used by the routes (400 `bad_config`) and the delivery actor (a refused delivery).
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, isIPv4 } from 'node:net';
import { BadConfig } from './errors.js';

export interface WebhookUrlPolicy {
  allowHttp: boolean;
  allowPrivate: boolean;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (the system resolver, as a connection would). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family as 4 | 6 }));

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address an IPv6 address carries (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::`), if any. */
function embeddedIPv4(address: string): string | null {
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether the address is one a webhook may not reach without SERVICE_WEBHOOKS_ALLOW_PRIVATE. */
export function isPrivateAddress(address: string): boolean {
  if (isIPv4(address)) return blocked.check(address, 'ipv4');
  const v4 = embeddedIPv4(address);
  if (v4 !== null) return blocked.check(v4, 'ipv4');
  return blocked.check(address, 'ipv6');
}

/**
 * The URL parsed, with the one address to connect to; throws 400 `bad_config` naming why
 * it is refused (the address is named, never the URL's query).
 */
export async function checkWebhookUrl(
  raw: string,
  policy: WebhookUrlPolicy,
  resolve: Resolver = systemResolver,
): Promise<{ url: URL; address: ResolvedAddress }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BadConfig('url is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    throw new BadConfig(policy.allowHttp ? 'url must be http or https' : 'url must be https');
  }
  if (url.username || url.password) throw new BadConfig('url must not carry a user name or password');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: ResolvedAddress[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) as 4 | 6 }];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      throw new BadConfig(`url host ${host} does not resolve`);
    }
    if (addresses.length === 0) throw new BadConfig(`url host ${host} does not resolve`);
  }
  if (!policy.allowPrivate) {
    // Every address the name has: the resolver could give any of them to the next connection.
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) {
      throw new BadConfig(
        `url host ${host} is or resolves to a loopback, private, link-local or unspecified address (${bad.address})`,
      );
    }
  }
  return { url, address: addresses[0]! };
}
