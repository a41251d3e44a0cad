import { ERROR_CODES } from '../core/errors.js';

/**
 * The codes the client reports of its own, beside Idem's ERROR_CODES that a server answers with:
 * - `cancelled`: the server cancelled the operation; nothing was done;
 * - `timeout`: no answer within the attempt timeout;
 * - `connection_closed`: the connection closed, or was not open;
 * - `send_failed`: the request could not be sent;
 * - `network`: refused, reset, unreachable, DNS (`ECONNREFUSED`, `ECONNRESET`, ...);
 * - `http_error`: an HTTP status from the server or a gateway, in `httpStatus`;
 * - `protocol_error`: a JSON-RPC error other than invalid params;
 * - `tool_error`: the tool answered an error without a code of this set (its own is in `serverCode`);
 * - `transport_error`: anything else the SDK or the transport threw (the request may have arrived).
 * A caller's abort is none of these: the call throws the signal's reason, as the MCP SDK does.
 */
export const CLIENT_FAILURE_CODES = [
  'cancelled',
  'timeout',
  'connection_closed',
  'send_failed',
  'network',
  'http_error',
  'protocol_error',
  'tool_error',
  'transport_error',
] as const;

/** Every code a client failure (`ToolError.code`) carries: closed, stable, public API. */
export const TOOL_ERROR_CODES = [...ERROR_CODES, ...CLIENT_FAILURE_CODES] as const;

/** One of `TOOL_ERROR_CODES`: an Idem error code or a client failure code. */
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number];

/** True when `value` is one of `TOOL_ERROR_CODES`: a code a client failure may carry. */
export function isToolErrorCode(value: unknown): value is ToolErrorCode {
  return typeof value === 'string' && (TOOL_ERROR_CODES as readonly string[]).includes(value);
}
