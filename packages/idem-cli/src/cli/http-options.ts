import { jwtVerifier } from 'idem/mcp';
import type { HttpLimits } from '../server/http-limits.js';
import type { HttpOAuthOptions } from '../server/http-server.js';
import { CliError } from './cli-error.js';
import { durationOption } from './options.js';

/** `idem serve`'s flags for its HTTP endpoint: Host/Origin, limits, OAuth resource server. */
export const HTTP_OPTIONS = {
  'allowed-host': { type: 'string', multiple: true },
  'allowed-origin': { type: 'string', multiple: true },
  'max-body': { type: 'string', default: '1MiB' },
  'max-buffered': { type: 'string', default: '64MiB' },
  'headers-timeout': { type: 'string', default: '10s' },
  'request-timeout': { type: 'string', default: '30s' },
  'jwt-issuer': { type: 'string' },
  'jwt-jwks-url': { type: 'string' },
  'jwt-audience': { type: 'string' },
  'jwt-scope': { type: 'string', multiple: true },
  'jwt-principal-claim': { type: 'string', default: 'sub' },
  'jwt-workspaces-claim': { type: 'string', default: 'workspaces' },
} as const;

export const HTTP_HELP = `  --allowed-host H           Host names to answer, repeatable or comma-separated, * for any
                             (default: localhost, 127.0.0.1, [::1], the bound address, every
                             interface address on 0.0.0.0/::, the --jwt-audience host); any other
                             Host gets 403 (DNS rebinding)
  --allowed-origin O         Origin host names to answer (default: the allowed hosts); a request
                             without Origin passes, any other Origin gets 403
  --max-body SIZE            largest request body, e.g. 512KiB, 1MiB (default 1MiB); larger: 413
  --max-buffered SIZE        request bodies held at once, all requests together (default 64MiB);
                             beyond it: 503 with Retry-After
  --headers-timeout DUR      time to send the request headers (default 10s)
  --request-timeout DUR      time to send the whole request (default 30s); then 408
  --jwt-issuer URL           accept JWT access tokens of this issuer (OAuth 2.1 resource server)
  --jwt-jwks-url URL         the issuer's signing keys (JWKS); required with --jwt-issuer
  --jwt-audience URL         the audience tokens must carry, also the resource URL published at
                             /.well-known/oauth-protected-resource (default http://HOST:PORT/mcp)
  --jwt-scope S              a scope every token must carry, repeatable (default none); else 403
  --jwt-principal-claim C    the claim naming the principal (default sub)
  --jwt-workspaces-claim C   the claim listing the workspaces, an array (default workspaces)`;

export interface HttpSettings {
  readonly limits: HttpLimits;
  readonly allowedHosts: string[] | undefined;
  readonly allowedOrigins: string[] | undefined;
  readonly oauth: HttpOAuthOptions | undefined;
}

type HttpValues = {
  'allowed-host'?: string[] | undefined;
  'allowed-origin'?: string[] | undefined;
  'max-body': string;
  'max-buffered': string;
  'headers-timeout': string;
  'request-timeout': string;
  'jwt-issuer'?: string | undefined;
  'jwt-jwks-url'?: string | undefined;
  'jwt-audience'?: string | undefined;
  'jwt-scope'?: string[] | undefined;
  'jwt-principal-claim': string;
  'jwt-workspaces-claim': string;
};

/** Checks every HTTP flag (a usage error, exit 2, names the flag) before anything starts. */
export function httpSettings(values: HttpValues, bindHost: string): HttpSettings {
  const maxBodyBytes = sizeOption('--max-body', values['max-body']);
  const maxBufferedBytes = sizeOption('--max-buffered', values['max-buffered']);
  if (maxBufferedBytes < maxBodyBytes) throw new CliError('--max-buffered must be at least --max-body', 2);
  const headersTimeoutMs = durationOption('--headers-timeout', values['headers-timeout'], 10 * 60_000);
  const requestTimeoutMs = durationOption('--request-timeout', values['request-timeout'], 60 * 60_000);
  if (headersTimeoutMs > requestTimeoutMs)
    throw new CliError('--headers-timeout must not be longer than --request-timeout', 2);
  return {
    limits: { maxBodyBytes, maxBufferedBytes, headersTimeoutMs, requestTimeoutMs },
    allowedHosts: listOption(values['allowed-host']),
    allowedOrigins: listOption(values['allowed-origin']),
    oauth: oauthOption(values, bindHost),
  };
}

function oauthOption(values: HttpValues, bindHost: string): HttpOAuthOptions | undefined {
  const issuer = values['jwt-issuer'];
  const jwksUrl = values['jwt-jwks-url'];
  const jwtFlags = Object.keys(values).filter(
    (name) =>
      name.startsWith('jwt-') && !name.endsWith('-claim') && values[name as keyof HttpValues] !== undefined,
  );
  if (issuer === undefined && jwksUrl === undefined) {
    if (jwtFlags.length > 0) throw new CliError(`--${jwtFlags[0]} needs --jwt-issuer and --jwt-jwks-url`, 2);
    return undefined;
  }
  if (issuer === undefined || jwksUrl === undefined)
    throw new CliError('--jwt-issuer and --jwt-jwks-url go together', 2);
  secureUrl('--jwt-issuer', issuer);
  secureUrl('--jwt-jwks-url', jwksUrl);
  const audience = values['jwt-audience'];
  if (audience !== undefined) urlOption('--jwt-audience', audience);
  else if (['0.0.0.0', '::', ''].includes(bindHost))
    throw new CliError('--jwt-audience URL is required when --host is a wildcard address', 2);
  const requiredScopes = listOption(values['jwt-scope']) ?? [];
  const principalClaim = values['jwt-principal-claim'];
  const workspacesClaim = values['jwt-workspaces-claim'];
  return {
    authorizationServers: [issuer],
    ...(audience === undefined ? {} : { audience }),
    requiredScopes,
    makeVerifier: (aud) => jwtVerifier({ issuer, jwksUrl, audience: aud, principalClaim, workspacesClaim }),
  };
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** A size in bytes: 65536, 512KiB, 1MiB, 1GiB; a bad value is a usage error. */
export function sizeOption(name: string, text: string): number {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = SIZE_UNITS[(match?.[2] ?? '?').toLowerCase()];
  const value = match === null || unit === undefined ? Number.NaN : Number(match[1]) * unit;
  if (!Number.isSafeInteger(value) || value < 1 || value > 16 * 1024 ** 3) {
    throw new CliError(
      `${name} must be a size from 1 byte to 16GiB (e.g. 512KiB, 1MiB), got ${JSON.stringify(text)}`,
      2,
    );
  }
  return value;
}

/** Repeated and comma-separated values, trimmed; undefined when none. */
function listOption(values: string[] | undefined): string[] | undefined {
  const items = (values ?? []).flatMap((value) => value.split(',')).map((item) => item.trim());
  const nonEmpty = items.filter((item) => item.length > 0);
  return nonEmpty.length === 0 ? undefined : nonEmpty;
}

function urlOption(name: string, text: string): URL {
  try {
    const url = new URL(text);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url;
  } catch {
    // reported below
  }
  throw new CliError(`${name} must be an http(s) URL, got ${JSON.stringify(text)}`, 2);
}

/** https, or http on a loopback host only (as the SDK requires of an issuer). */
function secureUrl(name: string, text: string): void {
  const url = urlOption(name, text);
  const loopback =
    ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) || url.hostname.startsWith('127.');
  if (url.protocol !== 'https:' && !loopback)
    throw new CliError(
      `${name} must be an https URL (http only on a loopback host), got ${JSON.stringify(text)}`,
      2,
    );
}
