/** What Idem puts on a request's auth info; structurally an MCP `AuthInfo` of SDK v2 and 1.x. */
export interface PrincipalAuthInfo {
  token: string;
  clientId: string;
  scopes: string[];
  extra: { principal: string };
}

/** The one member of an MCP `Transport` (SDK v2 or 1.x) that attachAuthInfo replaces. */
export interface MessageReceiver {
  // A method, so that both SDKs' transports (whose handlers are typed on their own messages) fit.
  onmessage?(message: never, extra?: never): void;
}

type Deliver = (message: unknown, extra?: Record<string, unknown>) => void;

/**
 * For transports with no authentication of their own (stdio, in-memory): after the server has
 * connected, attach a fixed identity to every incoming message, as HTTP auth does per request.
 * Both SDKs surface it to tool handlers (`ctx.http?.authInfo` in v2, `extra.authInfo` in 1.x).
 */
export function attachAuthInfo(transport: MessageReceiver, authInfo: PrincipalAuthInfo): void {
  const deliver = transport.onmessage as Deliver | undefined;
  if (deliver === undefined) throw new Error('attachAuthInfo: connect the server to the transport first');
  (transport as { onmessage?: Deliver }).onmessage = (message, extra) =>
    deliver.call(transport, message, { ...extra, authInfo });
}

/** The AuthInfo Idem reads the principal from. */
export function principalAuthInfo(principal: string, token = 'local'): PrincipalAuthInfo {
  return { token, clientId: principal, scopes: [], extra: { principal } };
}
