import { credentialsRefusal } from 'idem/client';

/** Socket and spawn error codes an operator recognizes, in words. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by the server',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPROTO: 'TLS handshake failed',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the server certificate is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the server certificate cannot be verified',
  ENOENT: 'command not found',
  EACCES: 'permission denied',
};

/** The error and its causes, outermost first (an AggregateError contributes its first error). */
function chain(error: unknown): unknown[] {
  const seen: unknown[] = [];
  let current: unknown = error;
  while (current !== undefined && current !== null && !seen.includes(current) && seen.length < 10) {
    seen.push(current);
    const { cause, errors } = current as { cause?: unknown; errors?: unknown };
    current = cause ?? (Array.isArray(errors) ? errors[0] : undefined);
  }
  return seen;
}

/**
 * Why a connection to a server failed, in one line: "connection refused (ECONNREFUSED)" rather
 * than fetch's bare "fetch failed", "the server refused the credentials (HTTP 401): …" rather than
 * the SDK's "Error POSTing to endpoint: ". Falls back to the messages of the error and its causes.
 */
export function connectionFailure(error: unknown): string {
  const refusal = credentialsRefusal(error);
  if (refusal !== undefined) return refusal.message;
  const errors = chain(error);
  for (const item of errors) {
    const code = (item as { code?: unknown }).code;
    if (typeof code === 'string' && code in REASONS) return `${REASONS[code]} (${code})`;
  }
  const messages: string[] = [];
  for (const item of errors) {
    const message = item instanceof Error ? item.message : typeof item === 'string' ? item : '';
    if (message === 'bad port') messages.push('fetch refuses to connect to this port (bad port)');
    else if (message !== '' && !messages.some((m) => m.includes(message))) messages.push(message);
  }
  // fetch's own "fetch failed" says nothing its cause does not say better.
  const telling = messages.length > 1 ? messages.filter((m) => m !== 'fetch failed') : messages;
  return telling.length === 0 ? String(error) : telling.join(': ');
}
