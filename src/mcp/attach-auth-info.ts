import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

type OnMessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

/**
 * For transports with no authentication of their own (stdio, in-memory): after the server has
 * connected, attach an identity to every incoming message, as HTTP auth does per request. A function
 * is asked again for each message (so a revoked credential stops working); undefined attaches none.
 */
export function attachAuthInfo(
  transport: Transport,
  authInfo: AuthInfo | (() => AuthInfo | undefined),
): void {
  const deliver = transport.onmessage as OnMessage | undefined;
  if (deliver === undefined) throw new Error('attachAuthInfo: connect the server to the transport first');
  const current = typeof authInfo === 'function' ? authInfo : () => authInfo;
  (transport as { onmessage?: OnMessage }).onmessage = (message, extra) => {
    const auth = current();
    deliver(message, auth === undefined ? extra : { ...extra, authInfo: auth });
  };
}

/** The AuthInfo Idem reads the principal from. */
export function principalAuthInfo(principal: string, token = 'local'): AuthInfo {
  return { token, clientId: principal, scopes: [], extra: { principal } };
}
