import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createMcpHandler,
  isLegacyRequest,
  type AuthInfo,
  type McpHttpHandler,
  type McpServer,
} from '@modelcontextprotocol/server';

/** The revisions `idem serve` and `idem proxy` answer on `/mcp` (and over stdio), newest first. */
export const SERVED_REVISIONS = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'] as const;

/** One HTTP exchange whose edge checks passed and whose body was read and parsed. */
export interface ParsedExchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The body as received (valid UTF-8). */
  readonly text: string;
  /** The body parsed. */
  readonly body: unknown;
  readonly authInfo: AuthInfo;
}

/**
 * The 2026-07-28 leg of `/mcp`: the SDK's strict modern handler (`legacy: 'reject'`) over a fresh
 * McpServer per request from the application's factory. It answers `server/discover`, validates
 * the `_meta` envelope and the `Mcp-Method` / `Mcp-Name` / `Mcp-Param-*` headers (-32020, HTTP
 * 400), fills `resultType` and the caching hints of list results, and carries the request's
 * JSON-RPC id on its errors. Idem's HTTP edge (Host/Origin, authentication, body limits, UTF-8)
 * has already run; 2025-era requests never come here (see isModernExchange).
 */
export function modernHandler(
  createMcpServer: () => McpServer,
  options: { maxBodyBytes: number; onerror?: (error: Error) => void },
): McpHttpHandler {
  return createMcpHandler(() => createMcpServer(), {
    legacy: 'reject',
    maxRequestBodySize: options.maxBodyBytes,
    ...(options.onerror === undefined ? {} : { onerror: options.onerror }),
  });
}

/**
 * Whether the SDK routes this request to the 2026-07-28 path: it carries the per-request `_meta`
 * claim, or a modern `MCP-Protocol-Version` header (the modern path answers even the malformed
 * ones). Classification only, from the parsed body and the headers, as createMcpHandler decides.
 */
export async function isModernExchange(exchange: ParsedExchange): Promise<boolean> {
  return !(await isLegacyRequest(webRequest(exchange), exchange.body));
}

/**
 * Serves one modern exchange: builds the web Request (whose signal aborts when the client goes
 * away: a closed stream is the revision's cancellation), calls the handler with the caller's
 * authentication, and writes the Response back, streaming when the SDK answers over SSE.
 */
export async function serveModernExchange(handler: McpHttpHandler, exchange: ParsedExchange): Promise<void> {
  const { res } = exchange;
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  const response = await handler.fetch(webRequest(exchange, gone.signal), {
    authInfo: exchange.authInfo,
    parsedBody: exchange.body,
  });
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  res.once('close', cancel);
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      if (res.destroyed) break;
      res.write(chunk.value);
    }
  } catch {
    // The stream broke (client gone, handler closed): nothing more to write.
  } finally {
    res.off('close', cancel);
    if (!res.destroyed) res.end();
  }
}

function webRequest(exchange: ParsedExchange, signal?: AbortSignal): Request {
  const { req } = exchange;
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  return new Request(requestUrl(req), {
    method: req.method ?? 'POST',
    headers,
    body: exchange.text,
    ...(signal === undefined ? {} : { signal }),
  });
}

/** The request's URL as the client named it; a Host the URL parser refuses is named `localhost`. */
function requestUrl(req: IncomingMessage): string {
  const path = req.url ?? '/mcp';
  const host = typeof req.headers.host === 'string' ? req.headers.host : 'localhost';
  try {
    return new URL(path, `http://${host}`).href;
  } catch {
    return new URL(path, 'http://localhost').href;
  }
}
