import { createServer, type Server } from 'node:http';

/** One request as a refusing server saw it. */
export interface RefusedRequest {
  readonly method: string | undefined;
  readonly authorization: string | undefined;
}

/** A loopback HTTP server that answers every request with one status, headers and body. */
export interface RefusingServer {
  readonly url: string;
  readonly requests: RefusedRequest[];
  close(): Promise<void>;
}

/** The refusals the tests use: Idem's own 401, a bare 401, a gateway's 403 and a JSON-RPC 403. */
export const REFUSALS = {
  idem401: {
    status: 401,
    headers: { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer realm="idem"' },
    body: JSON.stringify({ error: 'unauthorized', message: 'a valid bearer token is required' }),
    reason: 'a valid bearer token is required',
  },
  bare401: { status: 401, headers: {}, body: '', reason: undefined },
  html403: {
    status: 403,
    headers: { 'Content-Type': 'text/html' },
    body: '<html><body><h1>403 Forbidden</h1></body></html>',
    reason: undefined,
  },
  jsonRpc403: {
    status: 403,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Forbidden: token revoked' },
      id: null,
    }),
    reason: 'Forbidden: token revoked',
  },
} as const;

export type Refusal = (typeof REFUSALS)[keyof typeof REFUSALS];

/** Starts a server on 127.0.0.1 that refuses every request with `refusal`. */
export async function startRefusingServer(refusal: Refusal): Promise<RefusingServer> {
  const requests: RefusedRequest[] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method, authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => {
      res.writeHead(refusal.status, refusal.headers);
      res.end(refusal.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
