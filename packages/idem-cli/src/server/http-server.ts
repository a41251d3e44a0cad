import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { McpHttpHandler, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { authenticateRequest, type AuthSettings, type HttpReply } from './authenticate-request.js';
import { BodyBudget } from './body-budget.js';
import { checkHostAndOrigin, hostOriginPolicy, type HostOriginPolicy } from './host-origin-policy.js';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from './http-limits.js';
import { inboundRefusal } from './inbound-refusal.js';
import { isModernExchange, modernHandler, serveModernExchange } from './modern-exchange.js';
import { metadataReply, protectedResource, type ProtectedResource } from './protected-resource.js';
import { discardBody, readBody } from './read-body.js';
import type { McpApp } from './server-app.js';
import { resolvesToLoopback } from './loopback-address.js';
import type { Grant } from './token-registry.js';

/** OAuth 2.1 resource-server mode: bearer JWTs from these authorization servers are accepted. */
export interface HttpOAuthOptions {
  /** The issuer identifiers named in the protected-resource metadata. */
  readonly authorizationServers: readonly string[];
  /**
   * The resource identifier, and the audience tokens must carry. Default: this server's own URL
   * (`http://HOST:PORT/mcp`, known once it listens).
   */
  readonly audience?: string;
  /** The verifier for that audience (e.g. `jwtVerifier({ ..., audience })`). */
  makeVerifier(audience: string): OAuthTokenVerifier;
  readonly requiredScopes?: readonly string[];
}

export interface HttpServerOptions {
  host: string;
  port: number;
  /** When set, every request acts as this grant and no token is asked (loopback dev mode). */
  devGrant?: Grant;
  /** Also (or instead of the tokens file) accept JWT access tokens. */
  oauth?: HttpOAuthOptions;
  /** `Host` hostnames to answer (replacing the defaults of hostOriginPolicy); `*` for any. */
  allowedHosts?: readonly string[];
  /** `Origin` hostnames to answer (default: the allowed hosts). */
  allowedOrigins?: readonly string[];
  limits?: Partial<HttpLimits>;
  /**
   * Another application served beside `/mcp` under `prefix` (the operator console): made once the
   * server listens, with its URL, its Host/Origin policy and (in OAuth mode) the JWT verifier of
   * `/mcp`. Requests under the prefix pass the Host/Origin check first, then go to `handle`.
   */
  mount?: HttpMount;
}

/** An application mounted beside `/mcp` (see HttpServerOptions.mount). */
export interface HttpMount {
  readonly prefix: string;
  make(info: {
    readonly url: string;
    readonly policy: HostOriginPolicy;
    readonly verifier: OAuthTokenVerifier | undefined;
  }): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

export interface RunningHttpServer {
  readonly url: string;
  readonly server: Server;
  readonly policy: HostOriginPolicy;
  /** The RFC 9728 metadata, in OAuth mode. */
  readonly resource: ProtectedResource | undefined;
  close(): Promise<void>;
}

interface Context {
  readonly app: McpApp;
  readonly auth: AuthSettings;
  readonly policy: HostOriginPolicy;
  readonly resource: ProtectedResource | undefined;
  readonly limits: HttpLimits;
  readonly budget: BodyBudget;
  /** The 2026-07-28 leg (see modernHandler); 2025-era requests keep the stateless transport. */
  readonly modern: McpHttpHandler;
  readonly mounted?: {
    readonly prefix: string;
    handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  };
}

/**
 * Streamable HTTP at `/mcp`, stateless: each POST gets a fresh McpServer and transport, so any
 * instance can answer any request. Before MCP sees a request: its Host and Origin are checked (DNS
 * rebinding), it is authenticated, its body is read within the limits (413, or 503 when the bodies
 * of all in-flight requests would pass their budget), and the edge cases the SDK would get wrong
 * are answered (inboundRefusal). In OAuth mode the protected-resource metadata is served too.
 */
export async function startHttpServer(app: McpApp, options: HttpServerOptions): Promise<RunningHttpServer> {
  // Decided on the addresses the name resolves to (`127.0.0.1.example.com` is not loopback).
  if (options.devGrant !== undefined && !(await resolvesToLoopback(options.host))) {
    throw new Error(`dev mode (no --tokens) listens on loopback only; refusing host ${options.host}`);
  }
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  // Filled in once the server listens (the resource URL may name the port it got).
  const ready: { context?: Context } = {};
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // How often node looks for requests past those timeouts (its default is 30 s).
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      const ctx = ready.context;
      if (ctx === undefined) return sendJson(res, 503, jsonRpcError(-32000, 'starting'));
      handle(ctx, req, res).catch((error: unknown) => {
        app.logger.error('http.error', { code: (error as { code?: string }).code ?? 'internal' });
        if (!res.headersSent) sendJson(res, 500, jsonRpcError(-32603, 'Internal error'));
        else res.end();
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}/mcp`;
  const oauth = options.oauth;
  const audience = oauth === undefined ? undefined : (oauth.audience ?? url);
  const resource =
    oauth === undefined || audience === undefined
      ? undefined
      : protectedResource({
          resource: new URL(audience),
          authorizationServers: oauth.authorizationServers,
          ...(oauth.requiredScopes === undefined ? {} : { scopesSupported: oauth.requiredScopes }),
        });
  const policy = hostOriginPolicy({
    bindHost: options.host,
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
    ...(options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins }),
    ...(audience === undefined ? {} : { extraHosts: [new URL(audience).hostname] }),
  });
  const verifier = oauth === undefined || audience === undefined ? undefined : oauth.makeVerifier(audience);
  const mount = options.mount;
  ready.context = {
    app,
    policy,
    ...(mount === undefined
      ? {}
      : { mounted: { prefix: mount.prefix, handle: mount.make({ url, policy, verifier }) } }),
    resource,
    limits,
    budget: new BodyBudget(limits.maxBufferedBytes),
    modern: modernHandler(() => app.createMcpServer(), {
      maxBodyBytes: limits.maxBodyBytes,
      onerror: (error) => app.logger.info('http.modern_error', { error: error.name }),
    }),
    auth: {
      ...(options.devGrant === undefined ? {} : { devGrant: options.devGrant }),
      ...(app.registry.fromFile ? { registry: app.registry } : {}),
      ...(oauth === undefined || resource === undefined || audience === undefined
        ? {}
        : {
            oauth: {
              verifier: verifier ?? oauth.makeVerifier(audience),
              requiredScopes: oauth.requiredScopes ?? [],
              resourceMetadataUrl: resource.metadataUrl,
              expectedResource: new URL(audience),
            },
          }),
    },
  };
  return {
    url,
    server,
    policy,
    resource,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        void ready.context?.modern.close();
      }),
  };
}

async function handle(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { app, limits } = ctx;
  const verdict = checkHostAndOrigin(req, ctx.policy);
  if (!verdict.ok) {
    app.logger.warn('http.host_refused', { reason: verdict.reason });
    discardBody(req);
    return sendJson(res, 403, jsonRpcError(-32000, `Forbidden: ${verdict.message}`));
  }
  const path = (req.url ?? '/').split('?')[0] as string;
  if (ctx.resource?.paths.includes(path)) return sendReply(res, metadataReply(req.method, ctx.resource));
  const mounted = ctx.mounted;
  if (mounted !== undefined && (path === mounted.prefix || path.startsWith(`${mounted.prefix}/`)))
    return mounted.handle(req, res);
  if (path !== '/mcp') return sendJson(res, 404, { error: 'not_found', message: 'the MCP endpoint is /mcp' });
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return sendJson(res, 405, jsonRpcError(-32000, 'Method not allowed: this server is stateless, use POST'));
  }
  const authenticated = await authenticateRequest(req, ctx.auth);
  if (!authenticated.ok) {
    app.logger.warn('http.unauthorized', {
      reason: authenticated.reason,
      ...(authenticated.detail === undefined ? {} : { detail: authenticated.detail }),
    });
    discardBody(req);
    return sendReply(res, authenticated.reply);
  }
  const held = { bytes: 0 };
  res.once('close', () => ctx.budget.release(held.bytes));
  const read = await readBody(req, limits.maxBodyBytes, ctx.budget);
  if (read.kind === 'aborted') return;
  if (read.kind === 'not_utf8') {
    app.logger.info('http.refused', { reason: 'not_utf8', status: 400 });
    return sendJson(
      res,
      400,
      jsonRpcError(-32700, 'Parse error: the body is not valid UTF-8; nothing was done'),
    );
  }
  if (read.kind === 'too_large') {
    app.logger.warn('http.too_large', { limit_bytes: limits.maxBodyBytes });
    return sendJson(
      res,
      413,
      jsonRpcError(
        -32600,
        `Request body too large: the limit is ${limits.maxBodyBytes} bytes; nothing was done`,
      ),
    );
  }
  if (read.kind === 'over_budget') {
    app.logger.warn('http.over_budget', {
      buffered_bytes: ctx.budget.usedBytes,
      limit_bytes: limits.maxBufferedBytes,
    });
    res.setHeader('Retry-After', '1');
    return sendJson(
      res,
      503,
      jsonRpcError(-32000, 'Server busy: too many request bodies in flight; retry shortly, nothing was done'),
    );
  }
  held.bytes = read.reservedBytes;
  let body: unknown;
  try {
    body = JSON.parse(read.text);
  } catch {
    return sendJson(res, 400, jsonRpcError(-32700, 'Parse error: the body is not JSON'));
  }
  const exchange = { req, res, text: read.text, body, authInfo: authenticated.auth };
  const modern = await isModernExchange(exchange);
  const version = req.headers['mcp-protocol-version'];
  const refusal = inboundRefusal(body, typeof version === 'string' ? version : undefined);
  if (refusal !== undefined) {
    app.logger.info('http.refused', { reason: refusal.reason, status: refusal.status });
    return sendJson(res, refusal.status, modern ? completeResult(refusal.body) : refusal.body);
  }
  if (modern) return serveModernExchange(ctx.modern, exchange);
  const mcp = app.createMcpServer();
  const transport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    void transport.close();
    void mcp.close();
  });
  await mcp.connect(transport);
  await transport.handleRequest(Object.assign(req, { auth: authenticated.auth }), res, body);
}

/** A 2026-07-28 result names its type (`resultType: "complete"`); a JSON-RPC error is left as is. */
function completeResult(message: unknown): unknown {
  const result = (message as { result?: unknown }).result;
  if (typeof result !== 'object' || result === null) return message;
  return { ...(message as object), result: { ...result, resultType: 'complete' } };
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendReply(res, { status, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

function sendReply(res: ServerResponse, reply: HttpReply): void {
  res.writeHead(reply.status, reply.headers);
  res.end(reply.body);
}
