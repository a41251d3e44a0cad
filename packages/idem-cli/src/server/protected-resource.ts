import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/server';
import type { HttpReply } from './authenticate-request.js';

/** The RFC 9728 protected-resource metadata this server publishes as an OAuth resource server. */
export interface ProtectedResource {
  /** The metadata URL clients are pointed at (`resource_metadata` in every challenge). */
  readonly metadataUrl: string;
  /** The paths it is served at: RFC 9728's path-suffixed form for `/mcp`, and the bare form. */
  readonly paths: readonly string[];
  readonly document: Readonly<Record<string, unknown>>;
}

export interface ProtectedResourceOptions {
  /** This server's resource identifier: the public URL of its MCP endpoint. */
  readonly resource: URL;
  /** The authorization server(s) whose tokens it accepts (their issuer identifiers). */
  readonly authorizationServers: readonly string[];
  readonly scopesSupported?: readonly string[];
}

export function protectedResource(options: ProtectedResourceOptions): ProtectedResource {
  const metadataUrl = getOAuthProtectedResourceMetadataUrl(options.resource);
  const suffixed = new URL(metadataUrl).pathname;
  const bare = '/.well-known/oauth-protected-resource';
  const scopes = options.scopesSupported ?? [];
  return {
    metadataUrl,
    paths: suffixed === bare ? [bare] : [suffixed, bare],
    document: {
      resource: options.resource.href,
      authorization_servers: [...options.authorizationServers],
      ...(scopes.length === 0 ? {} : { scopes_supported: [...scopes] }),
      bearer_methods_supported: ['header'],
      resource_name: 'Idem reference MCP server',
    },
  };
}

const ALLOWED = 'GET, HEAD, OPTIONS';

/** The answer to one request for the metadata: the JSON on GET/HEAD, CORS preflight, 405 else. */
export function metadataReply(method: string | undefined, resource: ProtectedResource): HttpReply {
  const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Methods': ALLOWED };
  if (method === 'OPTIONS') return { status: 204, headers: cors, body: '' };
  if (method !== 'GET' && method !== 'HEAD') {
    return {
      status: 405,
      headers: { Allow: ALLOWED, 'Content-Type': 'application/json' },
      body: JSON.stringify({ error: 'method_not_allowed', message: `${method ?? '?'} is not supported` }),
    };
  }
  return {
    status: 200,
    headers: { ...cors, 'Content-Type': 'application/json', 'Cache-Control': 'max-age=3600' },
    body: JSON.stringify(resource.document),
  };
}
