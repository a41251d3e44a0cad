import type { OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { isOperatorGrant, tokenDigest, type TokenRegistry } from '../server/token-registry.js';

/** The JWT scope that makes an access token an operator's credential. */
export const OPERATOR_SCOPE = 'idem:operator';

/** How the console checks an operator's credential; neither set (on loopback): dev mode. */
export interface ConsoleCredentials {
  /** The tokens file: entries with `"role": "operator"` open the console. */
  readonly registry?: TokenRegistry;
  /** JWT access tokens carrying the scope `idem:operator` open the console. */
  readonly jwt?: OAuthTokenVerifier;
}

/** Who a credential signs in as, until when, and how to tell that it was revoked. */
export interface OperatorIdentity {
  readonly principal: string;
  /**
   * What a session keeps of the credential, for a revocation check in any instance
   * (credentialStillValid): `token:` and the token's digest, or `jwt`; never the token.
   */
  readonly credential: string;
  /** Epoch ms, for a JWT: its expiry. */
  readonly notAfter?: number;
  readonly stillValid: () => boolean;
}

/** Why a credential was refused, in words safe to show (never the token). */
export type CredentialVerdict =
  | { readonly ok: true; readonly identity: OperatorIdentity }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/**
 * Checks a pasted or bearer token: an operator entry of the tokens file first, then a JWT with the
 * `idem:operator` scope. A tool-access token is refused (`tool_token`): the console needs an
 * operator's credential, distinct from tool access. Never logs or returns the token.
 */
export async function verifyOperatorToken(
  token: string,
  credentials: ConsoleCredentials,
): Promise<CredentialVerdict> {
  const trimmed = token.trim();
  if (trimmed === '') return { ok: false, reason: 'missing_token', message: 'paste an operator token' };
  const registry = credentials.registry;
  const grant = registry?.grantFor(trimmed);
  if (grant !== undefined && registry !== undefined) {
    if (!isOperatorGrant(grant))
      return {
        ok: false,
        reason: 'tool_token',
        message: 'this token gives tool access, not the console: an operator token has "role": "operator"',
      };
    return {
      ok: true,
      identity: {
        principal: grant.principal,
        credential: `token:${tokenDigest(trimmed)}`,
        stillValid: () => {
          const now = registry.grantFor(trimmed);
          return now !== undefined && isOperatorGrant(now);
        },
      },
    };
  }
  if (credentials.jwt !== undefined) {
    try {
      const info = await credentials.jwt.verifyAccessToken(trimmed);
      if (!info.scopes.includes(OPERATOR_SCOPE))
        return {
          ok: false,
          reason: 'insufficient_scope',
          message: `this access token lacks the scope ${OPERATOR_SCOPE}`,
        };
      const principal = (info.extra as { principal?: unknown } | undefined)?.principal;
      return {
        ok: true,
        identity: {
          principal: typeof principal === 'string' && principal !== '' ? principal : info.clientId,
          credential: 'jwt',
          ...(info.expiresAt === undefined ? {} : { notAfter: info.expiresAt * 1000 }),
          stillValid: () => true,
        },
      };
    } catch {
      return { ok: false, reason: 'invalid_token', message: 'this token is not valid' };
    }
  }
  return { ok: false, reason: 'unknown_token', message: 'this token is not valid' };
}

/**
 * Whether a stored session's credential (OperatorIdentity.credential, or `dev`) still opens the
 * console of this instance: a token that its tokens file still lists as an operator's, a JWT while
 * JWTs are accepted (its expiry bounds the session), `dev` only in dev mode.
 */
export function credentialStillValid(
  credential: string,
  credentials: ConsoleCredentials,
  devMode: boolean,
): boolean {
  if (credential === 'dev') return devMode;
  if (devMode) return false;
  if (credential === 'jwt') return credentials.jwt !== undefined;
  if (credential.startsWith('token:')) {
    const grant = credentials.registry?.grantForDigest(credential.slice('token:'.length));
    return grant !== undefined && isOperatorGrant(grant);
  }
  return false;
}
