/** What Idem puts on a request's auth info; structurally an MCP `AuthInfo` of SDK v2 and 1.x. */
export interface PrincipalAuthInfo {
  token: string;
  clientId: string;
  scopes: string[];
  /** The principal, and any other fields of the credential (e.g. its workspaces) for `authorize`. */
  extra: { principal: string } & Record<string, unknown>;
}

/** The one member of an MCP `Transport` (SDK v2 or 1.x) that attachAuthInfo replaces. */
export interface MessageReceiver {
  // A method, so that both SDKs' transports (whose handlers are typed on their own messages) fit.
  onmessage?(message: never, extra?: never): void;
}

type Deliver = (message: unknown, extra?: Record<string, unknown>) => void;

/**
 * For transports with no authentication of their own (stdio, in-memory): after the server has
 * connected, attach an identity to every incoming message, as HTTP auth does per request. A function
 * is asked again for each message (so a revoked credential stops working); undefined attaches none.
 * Both SDKs surface it to tool handlers (`ctx.http?.authInfo` in v2, `extra.authInfo` in 1.x).
 */
export function attachAuthInfo(
  transport: MessageReceiver,
  authInfo: PrincipalAuthInfo | (() => PrincipalAuthInfo | undefined),
): void {
  const deliver = transport.onmessage as Deliver | undefined;
  if (deliver === undefined) throw new Error('attachAuthInfo: connect the server to the transport first');
  const current = typeof authInfo === 'function' ? authInfo : () => authInfo;
  (transport as { onmessage?: Deliver }).onmessage = (message, extra) => {
    const auth = current();
    deliver.call(transport, message, auth === undefined ? extra : { ...extra, authInfo: auth });
  };
}

/** The AuthInfo Idem reads the principal from. */
export function principalAuthInfo(principal: string, token = 'local'): PrincipalAuthInfo {
  return { token, clientId: principal, scopes: [], extra: { principal } };
}
