import {
  OAuthError,
  OAuthErrorCode,
  type AuthInfo,
  type OAuthTokenVerifier,
} from '@modelcontextprotocol/server';
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { identityFromClaims, type IdentityClaimNames } from '../idem-identity.js';

/** Asymmetric signatures only: a resource server holds no shared secret, and `none` is never valid. */
export const DEFAULT_JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

/** Which tokens `jwtVerifier` accepts (issuer, audience, keys, algorithms) and which claims it reads. */
export interface JwtVerifierOptions extends IdentityClaimNames {
  /** The issuer (`iss`) every token must name, exactly. */
  readonly issuer: string;
  /** The audience (`aud`) every token must contain: this server's resource URL (RFC 8707). */
  readonly audience: string;
  /** Where the issuer publishes its signing keys (JWKS). Either this or `keys`. */
  readonly jwksUrl?: string | URL;
  /** A key resolver of your own (jose's `createLocalJWKSet`, `createRemoteJWKSet`). */
  readonly keys?: JWTVerifyGetKey;
  /** Accepted `alg` values. Default DEFAULT_JWT_ALGORITHMS. */
  readonly algorithms?: readonly string[];
  /** Allowed clock skew for `exp` and `nbf`, seconds. Default 5. */
  readonly clockToleranceSec?: number;
  /** JWKS fetch: give up after this long, ms (default 5000). */
  readonly jwksTimeoutMs?: number;
  /** A token whose `kid` is unknown refetches the JWKS at most this often, ms (default 30000). */
  readonly jwksCooldownMs?: number;
  /** A fetched JWKS is used for this long before it is fetched again, ms (default 600000). */
  readonly jwksCacheMaxAgeMs?: number;
}

/**
 * An SDK v2 `OAuthTokenVerifier` for JWT access tokens (jose does the cryptography): the signature
 * against the issuer's JWKS (keys rotate: an unknown `kid` refetches it), `iss`, `aud`, `exp` (required)
 * and `nbf`, each with `clockToleranceSec` of skew. The `AuthInfo` it returns has `resource` = the
 * audience, the token's scopes (`scope` or `scp`), `expiresAt` = `exp` plus that skew (the last
 * moment the token is accepted: the SDK's `verifyBearerToken` refuses a token past `expiresAt` with
 * no skew of its own), and `extra = { principal, workspaces, claims }` from the claims
 * named in the options, which is what Idem's tools and `authorizeByGrant` read. Give it to the SDK's
 * `requireBearerAuth`/`verifyBearerToken` (which also checks required scopes). A token that fails
 * any check throws `OAuthError(invalid_token)` (a 401); keys that cannot be fetched throw
 * `server_error`, so that clients retry instead of discarding a good token.
 */
export function jwtVerifier(options: JwtVerifierOptions): OAuthTokenVerifier {
  const keys = options.keys ?? remoteKeys(options);
  const clockToleranceSec = options.clockToleranceSec ?? 5;
  if (!Number.isFinite(clockToleranceSec) || clockToleranceSec < 0) {
    throw new TypeError('jwtVerifier: clockToleranceSec must be a number of seconds, 0 or more');
  }
  const verifyOptions = {
    issuer: options.issuer,
    audience: options.audience,
    algorithms: [...(options.algorithms ?? DEFAULT_JWT_ALGORITHMS)],
    clockTolerance: clockToleranceSec,
    requiredClaims: ['exp'],
  };
  const resource = urlOrUndefined(options.audience);
  return {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys, verifyOptions));
      } catch (error) {
        throw oauthErrorOf(error);
      }
      let identity;
      try {
        identity = identityFromClaims(payload, options);
      } catch (error) {
        throw new OAuthError(OAuthErrorCode.InvalidToken, (error as Error).message);
      }
      return {
        token,
        clientId: stringClaim(payload.client_id) ?? stringClaim(payload.azp) ?? identity.principal,
        scopes: scopesOf(payload),
        // jose accepted it up to `exp + clockToleranceSec`; the SDK then checks expiresAt against now.
        expiresAt: (payload.exp as number) + clockToleranceSec,
        ...(resource === undefined ? {} : { resource }),
        extra: { principal: identity.principal, workspaces: [...identity.workspaces], claims: payload },
      };
    },
  };
}

function remoteKeys(options: JwtVerifierOptions): JWTVerifyGetKey {
  if (options.jwksUrl === undefined) throw new TypeError('jwtVerifier: give jwksUrl or keys');
  return createRemoteJWKSet(new URL(options.jwksUrl), {
    timeoutDuration: options.jwksTimeoutMs ?? 5000,
    cooldownDuration: options.jwksCooldownMs ?? 30_000,
    cacheMaxAge: options.jwksCacheMaxAgeMs ?? 600_000,
  });
}

const INVALID_TOKEN_CODES: Record<string, string> = {
  ERR_JWT_EXPIRED: 'the token has expired',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'the token signature is invalid',
  ERR_JWKS_NO_MATCHING_KEY: 'no signing key of the issuer matches the token',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'several signing keys of the issuer match the token',
  ERR_JOSE_ALG_NOT_ALLOWED: 'the token is signed with an algorithm that is not accepted',
  ERR_JOSE_NOT_SUPPORTED: 'the token uses an unsupported algorithm or key',
  ERR_JWS_INVALID: 'the token is not a valid JWS',
  ERR_JWT_INVALID: 'the token is not a valid JWT',
  ERR_JWK_INVALID: 'the signing key is invalid',
};

/** jose's failure as the SDK's OAuthError; jose's messages name a claim, never the token. */
function oauthErrorOf(error: unknown): OAuthError {
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') {
    const claim = (error as { claim?: unknown }).claim;
    return new OAuthError(OAuthErrorCode.InvalidToken, `the token's ${String(claim)} claim is invalid`);
  }
  if (typeof code === 'string' && code in INVALID_TOKEN_CODES) {
    return new OAuthError(OAuthErrorCode.InvalidToken, INVALID_TOKEN_CODES[code] as string);
  }
  // The JWKS could not be fetched or read (timeout, refused, not 200, not JSON): not the token's fault.
  return new OAuthError(OAuthErrorCode.ServerError, "cannot fetch the issuer's signing keys");
}

function scopesOf(payload: JWTPayload): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(' ').filter((s) => s.length > 0);
  const scp = payload.scp;
  if (Array.isArray(scp)) return scp.filter((s): s is string => typeof s === 'string');
  if (typeof scp === 'string') return scp.split(' ').filter((s) => s.length > 0);
  return [];
}

function stringClaim(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function urlOrUndefined(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
