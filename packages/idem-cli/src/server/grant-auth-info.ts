import type { PrincipalAuthInfo } from 'idem/mcp';
import type { Grant } from './token-registry.js';

/**
 * The AuthInfo a transport attaches for one authenticated grant: `extra` carries the principal AND
 * the workspaces of this token, so what a request may touch is bounded by the credential it came
 * with, not by every grant its principal holds. `label` says how it was authenticated; never the token.
 */
export function grantAuthInfo(grant: Grant, label: string): PrincipalAuthInfo {
  return {
    token: label,
    clientId: grant.principal,
    scopes: [],
    extra: { principal: grant.principal, workspaces: [...grant.workspaces] },
  };
}
