import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { grantAuthInfo } from './grant-auth-info.js';
import type { ServerApp } from './server-app.js';
import type { Grant } from './token-registry.js';

export interface HttpServerOptions {
  host: string;
  port: number;
  /** When set, every request acts as this grant and no token is asked (loopback dev mode). */
  devGrant?: Grant;
  maxBodyBytes?: number;
}

export interface RunningHttpServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || host.startsWith('127.');
}

/**
 * Streamable HTTP at `/mcp`, stateless: each POST gets a fresh McpServer and transport, so any
 * instance can answer any request. Authentication happens here, before MCP sees the request.
 */
export async function startHttpServer(
  app: ServerApp,
  options: HttpServerOptions,
): Promise<RunningHttpServer> {
  if (options.devGrant !== undefined && !isLoopback(options.host)) {
    throw new Error(`dev mode (no --tokens) listens on loopback only; refusing host ${options.host}`);
  }
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const server = createServer((req, res) => {
    handle(app, options, maxBody, req, res).catch((error: unknown) => {
      app.logger.error('http.error', { code: (error as { code?: string }).code ?? 'internal' });
      if (!res.headersSent) sendJson(res, 500, jsonRpcError(-32603, 'Internal error'));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/mcp`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(
  app: ServerApp,
  options: HttpServerOptions,
  maxBody: number,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/mcp') return sendJson(res, 404, { error: 'not_found', message: 'the MCP endpoint is /mcp' });
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return sendJson(res, 405, jsonRpcError(-32000, 'Method not allowed: this server is stateless, use POST'));
  }
  const grant = options.devGrant ?? authenticate(app, req);
  if (grant === undefined) {
    app.logger.warn('http.unauthorized', {
      reason: req.headers.authorization ? 'unknown_token' : 'missing_token',
    });
    res.setHeader('WWW-Authenticate', 'Bearer realm="idem"');
    return sendJson(res, 401, { error: 'unauthorized', message: 'a valid bearer token is required' });
  }
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req, maxBody));
  } catch (error) {
    if ((error as Error).message === 'too_large') {
      return sendJson(res, 413, jsonRpcError(-32600, `request body over ${maxBody} bytes`));
    }
    return sendJson(res, 400, jsonRpcError(-32700, 'Parse error: the body is not JSON'));
  }
  // The token's own workspaces travel with the request: they, not the principal's, bound it.
  const auth = grantAuthInfo(grant, options.devGrant === undefined ? 'bearer' : 'dev');
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
  await transport.handleRequest(Object.assign(req, { auth }), res, body);
}

function authenticate(app: ServerApp, req: IncomingMessage): Grant | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null) return undefined;
  return app.registry.grantFor(match[1] as string);
}

function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new Error('too_large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
}
