import type { IncomingMessage } from 'node:http';
import {
  OAuthError,
  bearerAuthChallengeResponse,
  verifyBearerToken,
  type AuthInfo,
  type OAuthTokenVerifier,
} from '@modelcontextprotocol/server';
import { grantAuthInfo } from './grant-auth-info.js';
import { isOperatorGrant, type Grant, type TokenRegistry } from './token-registry.js';

/** An OAuth 2.1 resource server's settings: how tokens are verified and where clients learn more. */
export interface OAuthSettings {
  readonly verifier: OAuthTokenVerifier;
  /** Scopes every token must carry; a token without one of them gets 403 insufficient_scope. */
  readonly requiredScopes: readonly string[];
  /** This server's RFC 9728 metadata URL, named in every challenge. */
  readonly resourceMetadataUrl: string;
  /** The token's `resource` (its audience) must be this. */
  readonly expectedResource?: URL;
}

export interface AuthSettings {
  /** Loopback dev mode: every request acts as this grant, no token is asked. */
  readonly devGrant?: Grant;
  /** The tokens file, when the server has one. */
  readonly registry?: TokenRegistry;
  readonly oauth?: OAuthSettings;
}

export interface HttpReply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export type AuthResult =
  | { readonly ok: true; readonly auth: AuthInfo }
  | { readonly ok: false; readonly reply: HttpReply; readonly reason: string; readonly detail?: string };

/**
 * Who an HTTP request acts as. A bearer token is looked up in the tokens file first, then (with
 * OAuth settings) verified as a JWT access token through the SDK's `verifyBearerToken`, whose
 * refusals are the SDK's challenges (`WWW-Authenticate: Bearer error=..., resource_metadata=...`).
 * With a tokens file only, a refusal is Idem's 401 `{ error: 'unauthorized' }`. Never logs a token.
 */
export async function authenticateRequest(req: IncomingMessage, settings: AuthSettings): Promise<AuthResult> {
  if (settings.devGrant !== undefined) return { ok: true, auth: grantAuthInfo(settings.devGrant, 'dev') };
  const header = req.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  const grant =
    match === null || settings.registry === undefined
      ? undefined
      : settings.registry.grantFor(match[1] as string);
  // An operator's token opens the console only: it is no tool access.
  if (grant !== undefined && isOperatorGrant(grant)) {
    return {
      ok: false,
      reason: 'operator_token',
      reply: {
        status: 403,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          error: 'forbidden',
          message: 'an operator token opens the operator console, not the tools',
        }),
      },
    };
  }
  if (grant !== undefined) return { ok: true, auth: grantAuthInfo(grant, 'bearer') };
  const oauth = settings.oauth;
  if (oauth === undefined) {
    return {
      ok: false,
      reason: header === undefined ? 'missing_token' : 'unknown_token',
      reply: {
        status: 401,
        headers: { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer realm="idem"' },
        body: JSON.stringify({ error: 'unauthorized', message: 'a valid bearer token is required' }),
      },
    };
  }
  const options = {
    verifier: oauth.verifier,
    requiredScopes: [...oauth.requiredScopes],
    resourceMetadataUrl: oauth.resourceMetadataUrl,
    ...(oauth.expectedResource === undefined ? {} : { expectedResource: oauth.expectedResource }),
  };
  try {
    // One header, as the SDK's fetch adapters take it (a repeated header is comma-joined there).
    return { ok: true, auth: await verifyBearerToken(header?.split(',')[0], options) };
  } catch (error) {
    const challenge = bearerAuthChallengeResponse(error, options);
    const headers: Record<string, string> = {};
    challenge.headers.forEach((value, name) => (headers[name] = value));
    return {
      ok: false,
      reason: error instanceof OAuthError ? String(error.code) : 'server_error',
      ...(error instanceof OAuthError ? { detail: error.message } : {}),
      reply: { status: challenge.status, headers, body: await challenge.text() },
    };
  }
}
