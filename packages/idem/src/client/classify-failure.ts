import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { credentialsRefusal, httpStatusOf } from './credentials-refusal.js';
import type { ToolErrorCode } from './tool-error-codes.js';
import type { ToolError } from './tool-reply.js';

/**
 * A call that threw instead of answering. `transient`: nothing definite was observed (timeout,
 * dropped or refused connection, a gateway's 5xx); the action may or may not have happened, and a
 * retry with the same key is safe. `definitive`: the server or the protocol refused the request
 * itself (a JSON-RPC error, 401/403 as `forbidden` saying that the server refused the credentials,
 * 404, 413 as `invalid_argument`), so repeating it changes nothing. `closed` says the connection is
 * gone and must be replaced before the next attempt.
 */
export type FailureKind =
  | { readonly kind: 'transient'; readonly error: ToolError; readonly closed: boolean }
  | { readonly kind: 'definitive'; readonly error: ToolError };

const RETRYABLE_HTTP = new Set([408, 425, 429, 500, 502, 503, 504]);
const NETWORK_CODES =
  /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_\w+)$/;

/** What a thrown call means for a retry (see FailureKind), with a code from TOOL_ERROR_CODES. */
export function classifyFailure(error: unknown): FailureKind {
  const message = error instanceof Error ? error.message : String(error);
  // 401/403 (or the SDK's UnauthorizedError): `forbidden`, saying that the credentials were refused.
  const refusal = credentialsRefusal(error);
  if (refusal !== undefined) {
    const { httpStatus } = refusal;
    return {
      kind: 'definitive',
      error: {
        code: 'forbidden',
        message: refusal.message,
        retryable: false,
        ...(httpStatus === undefined ? {} : { httpStatus }),
      },
    };
  }
  // SdkHttpError extends SdkError: the HTTP status decides before the SDK's own code does.
  const status = httpStatusOf(error);
  if (status !== undefined) {
    if (RETRYABLE_HTTP.has(status)) {
      return {
        kind: 'transient',
        error: { code: 'http_error', message, retryable: true, httpStatus: status },
        closed: false,
      };
    }
    if (status === 413) {
      // Refused before it reached a tool: nothing was done, and the same request will be refused again.
      const tooLarge = `the server refused the request as too large (HTTP 413); nothing was done: ${message}`;
      return { kind: 'definitive', error: { code: 'invalid_argument', message: tooLarge, retryable: false } };
    }
    return {
      kind: 'definitive',
      error: { code: 'http_error', message, retryable: false, httpStatus: status },
    };
  }
  if (error instanceof SdkError) {
    switch (error.code) {
      case SdkErrorCode.RequestTimeout:
        return transient('timeout', 'no answer within the attempt timeout', false);
      case SdkErrorCode.ConnectionClosed:
      case SdkErrorCode.NotConnected:
        return transient('connection_closed', message, true);
      case SdkErrorCode.SendFailed:
        return transient('send_failed', message, true);
      default:
        // The request may have reached the server (an unexpected content type from a proxy, a
        // result the SDK could not parse): unknown, and a retry with the same key is safe.
        return transient('transport_error', message, false);
    }
  }
  if (error instanceof ProtocolError) {
    const code = error.code === ProtocolErrorCode.InvalidParams ? 'invalid_argument' : 'protocol_error';
    return { kind: 'definitive', error: { code, message, retryable: false } };
  }
  if (message === 'Not connected') return transient('connection_closed', message, true);
  if (isNetworkError(error)) return transient('network', message, false);
  // Anything else: we cannot tell whether the request reached the server, so the outcome is unknown
  // and a retry with the same key (which cannot act twice) is the honest next step.
  return transient('transport_error', message, false);
}

function transient(code: ToolErrorCode, message: string, closed: boolean): FailureKind {
  return { kind: 'transient', error: { code, message, retryable: true }, closed };
}

function isNetworkError(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.test(code)) return true;
    if (current instanceof TypeError && /fetch failed/i.test(current.message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
