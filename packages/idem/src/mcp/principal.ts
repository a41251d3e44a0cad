import { unstorableText } from '../core/unstorable-text.js';
import type { ToolCallContext } from './idem-tool.js';

/** The part of an MCP `AuthInfo` that Idem reads; SDK v2 and 1.x share this shape. */
export interface AuthInfoLike {
  readonly extra?: Record<string, unknown> | undefined;
}

/**
 * The authenticated principal of a request: `authInfo.extra.principal` as set by the transport's
 * authentication (bearer token over HTTP, the process's configured identity over stdio). Never a
 * tool argument. Undefined (no principal: every tool answers `forbidden`) when it is missing, empty,
 * or holds U+0000 or a lone surrogate, which PostgreSQL cannot store as written (two principals
 * would become one there): a verifier of your own cannot let such a principal through.
 */
export function principalFromAuthInfo(authInfo: AuthInfoLike | undefined): string | undefined {
  const principal = authInfo?.extra?.principal;
  return typeof principal === 'string' && principal.length > 0 && unstorableText(principal) === undefined
    ? principal
    : undefined;
}

/**
 * The `ToolCallContext` an `IdemTool`'s `handle` takes, built from what a framework hands a tool
 * callback (`(args, extra)`): the request's `AuthInfo` (or anything with its `extra`) and its abort
 * signal. `principal` is `principalFromAuthInfo(authInfo)`: `extra.principal`, or undefined (every
 * tool then answers `forbidden`) when it is missing, empty or not storable. `credentials` is the
 * whole `extra` as given (so `authorizeByGrant` sees the credential's own `workspaces`), left out
 * without one; `signal` and `meta` (the request's `params._meta`, whose `traceparent` the call's
 * span continues) are passed through, left out when undefined. It reads nothing else, never the
 * tool's arguments, and never throws. `registerIdemTool` (SDK v2 and 1.x) builds its context with
 * it; a framework of your own calls `tool.handle(args, toolCallContext(authInfo, signal, meta))`.
 */
export function toolCallContext(
  authInfo: AuthInfoLike | undefined,
  signal: AbortSignal | undefined,
  meta?: Readonly<Record<string, unknown>>,
): ToolCallContext {
  return {
    principal: principalFromAuthInfo(authInfo),
    ...(authInfo?.extra === undefined ? {} : { credentials: authInfo.extra }),
    ...(signal === undefined ? {} : { signal }),
    ...(meta === undefined ? {} : { meta }),
  };
}
