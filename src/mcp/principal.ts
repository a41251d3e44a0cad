import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';

export type RequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The authenticated principal of a request: `authInfo.extra.principal` as set by the transport's
 * authentication (bearer token over HTTP, the process's configured identity over stdio). Never a
 * tool argument.
 */
export function principalOf(extra: Pick<RequestExtra, 'authInfo'>): string | undefined {
  const principal = extra.authInfo?.extra?.principal;
  return typeof principal === 'string' && principal.length > 0 ? principal : undefined;
}
