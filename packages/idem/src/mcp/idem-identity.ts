import { IdemError } from '../core/errors.js';
import { unstorableText } from '../core/unstorable-text.js';
import type { Authorize } from '../executor/executor.js';
import { principalFromAuthInfo, type AuthInfoLike } from './principal.js';

/** Who a request acts as, and the only workspaces it may touch. */
export interface IdemIdentity {
  readonly principal: string;
  readonly workspaces: readonly string[];
}

/** Where a token's claims (a JWT payload, an introspection answer) carry the identity. */
export interface IdentityClaimNames {
  /** The claim naming the principal. Default `sub`. */
  readonly principalClaim?: string;
  /** The claim listing the workspaces, an array of strings. Default `workspaces`; absent: none. */
  readonly workspacesClaim?: string;
}

export const MAX_PRINCIPAL_LENGTH = 200;
export const MAX_WORKSPACE_LENGTH = 128;

/**
 * The identity in a verified token's claims. Claim names are taken literally (a name with dots or
 * a URL, as some issuers require for custom claims, is one claim). Throws `invalid_argument` naming
 * the claim when the principal is missing or not a string of 1 to 200 characters, or when the
 * workspaces claim is present but not an array of strings of 1 to 128 characters, or when either
 * holds U+0000 or a lone surrogate (which PostgreSQL cannot store as written: `mallory\uD800` and
 * `mallory\uDFFF` would be one principal there).
 */
export function identityFromClaims(
  claims: Readonly<Record<string, unknown>>,
  names: IdentityClaimNames = {},
): IdemIdentity {
  const principalClaim = names.principalClaim ?? 'sub';
  const workspacesClaim = names.workspacesClaim ?? 'workspaces';
  const principal = Object.hasOwn(claims, principalClaim) ? claims[principalClaim] : undefined;
  if (!isName(principal, MAX_PRINCIPAL_LENGTH)) {
    throw new IdemError(
      'invalid_argument',
      `the token's claim ${JSON.stringify(principalClaim)} must be a string of 1 to ${MAX_PRINCIPAL_LENGTH} characters`,
    );
  }
  const principalProblem = unstorableText(principal);
  if (principalProblem !== undefined) {
    throw new IdemError(
      'invalid_argument',
      `the token's claim ${JSON.stringify(principalClaim)} ${principalProblem}`,
    );
  }
  const workspaces = Object.hasOwn(claims, workspacesClaim) ? claims[workspacesClaim] : [];
  if (!Array.isArray(workspaces) || !workspaces.every((ws) => isName(ws, MAX_WORKSPACE_LENGTH))) {
    throw new IdemError(
      'invalid_argument',
      `the token's claim ${JSON.stringify(workspacesClaim)} must be an array of strings of 1 to ${MAX_WORKSPACE_LENGTH} characters`,
    );
  }
  const workspaceProblem = workspaces.map((ws: string) => unstorableText(ws)).find((p) => p !== undefined);
  if (workspaceProblem !== undefined) {
    throw new IdemError(
      'invalid_argument',
      `the token's claim ${JSON.stringify(workspacesClaim)}: every workspace ${workspaceProblem}`,
    );
  }
  return { principal, workspaces: [...(workspaces as string[])] };
}

/**
 * The identity Idem acts on for an MCP `AuthInfo` (SDK v2 or 1.x): `extra.principal` and
 * `extra.workspaces`, as `jwtVerifier`, `principalAuthInfo` and the reference server's tokens put
 * them. Undefined without a principal. A verifier of your own only has to fill these two fields.
 */
export function identityFromAuthInfo(authInfo: AuthInfoLike | undefined): IdemIdentity | undefined {
  const principal = principalFromAuthInfo(authInfo);
  return principal === undefined ? undefined : { principal, workspaces: grantedWorkspaces(authInfo?.extra) };
}

/** The workspaces a credential (`AuthInfo.extra`) grants: its `workspaces` strings; none without. */
export function grantedWorkspaces(extra: Readonly<Record<string, unknown>> | undefined): readonly string[] {
  const workspaces = extra?.workspaces;
  return Array.isArray(workspaces) ? workspaces.filter((ws): ws is string => typeof ws === 'string') : [];
}

/**
 * An executor `authorize` that allows exactly the workspaces of the credential the call came with
 * (`credentials.workspaces`), never the union of everything its principal holds elsewhere.
 */
export const authorizeByGrant: Authorize = (_principal, workspace, { credentials }) =>
  grantedWorkspaces(credentials).includes(workspace);

function isName(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= max;
}
