import { ProtocolError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import type { McpClient } from '../client/connect-target.js';

/** How a framework's own MCP client sends one `tools/call`: its result, or what it threw. */
export type FrameworkSend = (
  name: string,
  args: Record<string, unknown>,
  options: { signal?: AbortSignal; timeout?: number },
) => Promise<unknown>;

/**
 * An `IdemClient` connection that sends through a framework's own MCP client (the AI SDK's
 * `createMCPClient`, an OpenAI Agents `MCPServer`, …), so that the framework's transport, auth and
 * own retries stay in place and the same arguments, key included, go out on each of its resends.
 * What it throws is translated into the MCP SDK's errors, so that the client's classification holds:
 * a JSON-RPC error (a negative integer `code`) is a `ProtocolError` (definitive: nothing to retry),
 * an HTTP status (`statusCode` or `status`) an `SdkHttpError`; anything else is left as it is, which
 * the client treats as "may have reached the server": retried with the same key. The framework owns
 * the connection: `close()` leaves it open. It has the members `IdemClient` uses of a connection
 * (`transport`, `callTool`, `close`, `getNegotiatedProtocolVersion`): one it gains must be added here.
 */
export function frameworkConnection(send: FrameworkSend): McpClient {
  const connection = {
    // Never undefined: the framework reconnects on its own; the client must not drop this one.
    transport: {},
    async callTool(
      params: { name: string; arguments?: Record<string, unknown> },
      options: { signal?: AbortSignal; timeout?: number } = {},
    ): Promise<unknown> {
      try {
        return await send(params.name, params.arguments ?? {}, options);
      } catch (error) {
        throw translated(error);
      }
    },
    async close(): Promise<void> {},
    // The framework's client negotiated the revision and mirrors any headers itself: nothing for
    // IdemClient to list on its behalf.
    getNegotiatedProtocolVersion(): string | undefined {
      return undefined;
    },
  };
  return connection as unknown as McpClient;
}

function translated(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const { code, statusCode, status, message } = error as {
    code?: unknown;
    statusCode?: unknown;
    status?: unknown;
    message?: unknown;
  };
  const text = typeof message === 'string' ? message : String(error);
  const http = typeof statusCode === 'number' ? statusCode : typeof status === 'number' ? status : undefined;
  if (http !== undefined && Number.isInteger(http) && http >= 100 && http <= 599) {
    return new SdkHttpError(SdkErrorCode.SendFailed, text, { status: http }, { cause: error });
  }
  if (typeof code === 'number' && Number.isInteger(code) && code < 0) {
    return new ProtocolError(code, text);
  }
  return error;
}
