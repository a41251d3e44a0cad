import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

type OnMessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

/**
 * For transports with no authentication of their own (stdio, in-memory): after the server has
 * connected, attach a fixed identity to every incoming message, as HTTP auth does per request.
 */
export function attachAuthInfo(transport: Transport, authInfo: AuthInfo): void {
  const deliver = transport.onmessage as OnMessage | undefined;
  if (deliver === undefined) throw new Error('attachAuthInfo: connect the server to the transport first');
  (transport as { onmessage?: OnMessage }).onmessage = (message, extra) =>
    deliver(message, { ...extra, authInfo });
}

/** The AuthInfo Idem reads the principal from. */
export function principalAuthInfo(principal: string, token = 'local'): AuthInfo {
  return { token, clientId: principal, scopes: [], extra: { principal } };
}
