/** The part of an MCP `AuthInfo` that Idem reads; SDK v2 and 1.x share this shape. */
export interface AuthInfoLike {
  readonly extra?: Record<string, unknown> | undefined;
}

/**
 * The authenticated principal of a request: `authInfo.extra.principal` as set by the transport's
 * authentication (bearer token over HTTP, the process's configured identity over stdio). Never a
 * tool argument.
 */
export function principalFromAuthInfo(authInfo: AuthInfoLike | undefined): string | undefined {
  const principal = authInfo?.extra?.principal;
  return typeof principal === 'string' && principal.length > 0 ? principal : undefined;
}
