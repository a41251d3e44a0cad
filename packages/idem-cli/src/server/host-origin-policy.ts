import type { IncomingMessage } from 'node:http';
import { networkInterfaces } from 'node:os';
import {
  localhostAllowedHostnames,
  validateHostHeader,
  validateOriginHeader,
} from '@modelcontextprotocol/server';

/** Which `Host` and `Origin` hostnames (port-agnostic, IPv6 in brackets) a server answers. */
export interface HostOriginPolicy {
  /** Allowed `Host` hostnames; `*` allows any. */
  readonly hosts: readonly string[];
  /** Allowed `Origin` hostnames (or `<scheme>://*`); `*` allows any. A request without Origin passes. */
  readonly origins: readonly string[];
}

export interface HostOriginPolicyOptions {
  /** The interface the server listens on (`127.0.0.1`, `::1`, `0.0.0.0`, `idem.internal`). */
  readonly bindHost: string;
  /** `--allowed-host` values: replace the defaults. */
  readonly allowedHosts?: readonly string[];
  /** `--allowed-origin` values: replace the defaults. */
  readonly allowedOrigins?: readonly string[];
  /** Further names the defaults include, e.g. the hostname of the public resource URL. */
  readonly extraHosts?: readonly string[];
}

const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]', '']);

/**
 * The default policy answers only names that reach this server without a DNS name an attacker could
 * rebind: the loopback names (`localhost`, `127.0.0.1`, `[::1]`), the bound address, every
 * interface address on a wildcard bind (`0.0.0.0`, `::`), and `extraHosts`. A server reached
 * through a DNS name needs `--allowed-host NAME`. Origins default to the allowed hosts (never `*`).
 */
export function hostOriginPolicy(options: HostOriginPolicyOptions): HostOriginPolicy {
  const defaults = new Set(localhostAllowedHostnames());
  if (WILDCARD_BINDS.has(options.bindHost)) {
    for (const address of interfaceAddresses()) defaults.add(address);
  } else {
    defaults.add(hostnameOf(options.bindHost));
  }
  for (const extra of options.extraHosts ?? []) defaults.add(hostnameOf(extra));
  const hosts = options.allowedHosts?.length ? options.allowedHosts.map(hostnameOf) : [...defaults];
  const origins = options.allowedOrigins?.length
    ? options.allowedOrigins.map((origin) => (origin.includes('://') ? origin : hostnameOf(origin)))
    : hosts.filter((host) => host !== '*');
  return { hosts: unique(hosts), origins: unique(origins) };
}

export type HostOriginVerdict =
  { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly message: string };

/**
 * The SDK's DNS-rebinding checks (`validateHostHeader`, `validateOriginHeader`) for one request:
 * a missing or unlisted Host, or a present Origin that is unlisted or unparsable (`null`), fails.
 */
export function checkHostAndOrigin(req: IncomingMessage, policy: HostOriginPolicy): HostOriginVerdict {
  if (!policy.hosts.includes('*')) {
    const host = validateHostHeader(req.headers.host, [...policy.hosts]);
    if (!host.ok) return { ok: false, reason: host.errorCode, message: host.message };
  }
  if (!policy.origins.includes('*')) {
    const origin = validateOriginHeader(req.headers.origin, [...policy.origins]);
    if (!origin.ok) return { ok: false, reason: origin.errorCode, message: origin.message };
  }
  return { ok: true };
}

/** `::1` → `[::1]`, `Example.COM` → `example.com`; `*` stays. */
function hostnameOf(name: string): string {
  if (name === '*') return name;
  const lower = name.trim().toLowerCase();
  if (lower.includes(':') && !lower.startsWith('[')) return `[${lower}]`;
  return lower;
}

function interfaceAddresses(): string[] {
  const addresses: string[] = [];
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      // A link-local IPv6 address needs a zone id, which a Host header cannot carry.
      if (entry.family === 'IPv6' && entry.scopeid !== undefined && entry.scopeid !== 0) continue;
      addresses.push(hostnameOf(entry.address));
    }
  }
  return addresses;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
