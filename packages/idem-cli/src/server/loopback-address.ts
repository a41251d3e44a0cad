import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** 127.0.0.0/8 and ::1 (BlockList also matches IPv4-mapped IPv6 addresses against the IPv4 rule). */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether an IP address (a literal, not a name) is a loopback address: IPv4 127.0.0.0/8, IPv6
 * `::1`, or an IPv4-mapped IPv6 address of 127.0.0.0/8. Anything that is not an IP literal
 * (`127.0.0.1.example.com`, `localhost`) is not: a name is decided by what it resolves to
 * (resolvesToLoopback).
 */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 0) return false;
  return LOOPBACK.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Whether `host` (an address or a name) is loopback, decided on the addresses it resolves to: an
 * IP literal by isLoopbackAddress; a name only when it resolves (the system resolver, as `listen`
 * uses) to at least one address and every one is loopback. A name that does not resolve is not
 * loopback. So `127.0.0.1.example.com` is not, whatever it starts with.
 */
export async function resolvesToLoopback(host: string): Promise<boolean> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare) !== 0) return isLoopbackAddress(bare);
  try {
    const addresses = await lookup(bare, { all: true });
    return addresses.length > 0 && addresses.every((entry) => isLoopbackAddress(entry.address));
  } catch {
    return false;
  }
}
