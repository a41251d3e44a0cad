import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';

/**
 * What one failed upstream call established, by kind: whether the request may have reached the
 * upstream (`sent`), and a body-free sentence for the record and the logs.
 *
 * - `not_connected`: the SDK refused locally before writing the request (no transport, or a method
 *   the negotiated protocol revision does not define). Nothing was sent.
 * - `connection_refused`: the upstream refused the TCP connection (ECONNREFUSED): no byte of the
 *   request reached it. Nothing was sent.
 * - `upstream_error`: the upstream answered a JSON-RPC error. It came after the request did, and an
 *   upstream may answer an error after it acted (a server whose own output check fails, a bug), so
 *   it proves nothing.
 * - `timeout`, `aborted`, `connection_closed`, `send_failed`, `http_status`, `invalid_answer`,
 *   `other`: after the request may have been written; the upstream may have acted.
 */
export type UpstreamFailure =
  | { readonly sent: false; readonly kind: 'not_connected' | 'connection_refused'; readonly reason: string }
  | {
      readonly sent: true;
      readonly kind:
        | 'upstream_error'
        | 'timeout'
        | 'aborted'
        | 'connection_closed'
        | 'send_failed'
        | 'http_status'
        | 'invalid_answer'
        | 'other';
      readonly reason: string;
    };

/**
 * Classifies what a `tools/call` to the upstream threw, in the one place the proxy does it. Only
 * what provably happened before the request was written says `sent: false`; everything else may
 * have reached the upstream. `aborted` tells a timeout of our own signal (the lease was lost) from
 * the SDK's own timer.
 */
export function upstreamFailure(
  error: unknown,
  context: { readonly timeoutMs: number; readonly aborted: boolean },
): UpstreamFailure {
  if (refusedConnection(error))
    return { sent: false, kind: 'connection_refused', reason: 'the upstream refused the connection' };
  if (error instanceof SdkHttpError)
    return {
      sent: true,
      kind: 'http_status',
      reason: `the upstream answered HTTP ${String(error.status)} to the call`,
    };
  if (error instanceof SdkError) {
    switch (error.code) {
      case SdkErrorCode.NotConnected:
      case SdkErrorCode.MethodNotSupportedByProtocolVersion:
        return { sent: false, kind: 'not_connected', reason: `the call was not sent (${error.code})` };
      case SdkErrorCode.RequestTimeout:
        return context.aborted
          ? { sent: true, kind: 'aborted', reason: 'the call was abandoned (the proxy lost its lease)' }
          : { sent: true, kind: 'timeout', reason: `no answer within ${context.timeoutMs} ms` };
      case SdkErrorCode.ConnectionClosed:
        return { sent: true, kind: 'connection_closed', reason: 'the upstream connection closed' };
      case SdkErrorCode.SendFailed:
        return { sent: true, kind: 'send_failed', reason: 'writing the call to the upstream failed' };
      case SdkErrorCode.InvalidResult:
      case SdkErrorCode.UnsupportedResultType:
        return {
          sent: true,
          kind: 'invalid_answer',
          reason: `the upstream's answer is not a CallToolResult the proxy can read (${error.code})`,
        };
      default:
        return { sent: true, kind: 'other', reason: `the upstream call failed (${error.code})` };
    }
  }
  if (error instanceof ProtocolError)
    return {
      sent: true,
      kind: 'upstream_error',
      reason: `the upstream answered JSON-RPC error ${String(error.code)}`,
    };
  // The SDK's one untyped refusal before writing: `request()` on a client without a transport.
  if (error instanceof Error && error.message === 'Not connected')
    return { sent: false, kind: 'not_connected', reason: 'the call was not sent (not connected)' };
  return { sent: true, kind: 'other', reason: 'the upstream call failed' };
}

/** Whether an error (or one of its causes) is a refused TCP connection. */
function refusedConnection(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if ((current as { code?: unknown }).code === 'ECONNREFUSED') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
