import { hash } from 'node:crypto';
import type { OperationIdentity } from './operation-identity.js';

/** Characters of an intent digest: 128 bits of SHA-256, base64url without padding. */
export const INTENT_DIGEST_LENGTH = 22;

/**
 * A stable, log-safe name of one intended action: the first 128 bits of SHA-256 (base64url) over
 * the canonical JSON of `[principal, workspace, operation, key]`. Every retry of the same action
 * has the same digest whatever became of its earlier attempts (busy, internal, a refusal, a
 * replay), so the log lines of one action can be joined without logging its key. The version is
 * left out on purpose: a retry that crosses a version bump names the same action. Pure (no I/O, no
 * clock) and total: it never throws, whatever the strings hold.
 */
export function intentDigest(
  identity: Pick<OperationIdentity, 'principal' | 'workspace' | 'operation' | 'key'>,
): string {
  // JSON.stringify of an array of strings is its RFC 8785 form; unlike a JCS library it escapes a
  // lone surrogate (\ud800) instead of throwing, so such strings stay distinct and still digest.
  const canonical = JSON.stringify([
    identity.principal,
    identity.workspace,
    identity.operation,
    identity.key,
  ]);
  // One-shot `hash` (UTF-8): the same digest as a `Hash` object, at a fraction of its cost per call.
  return hash('sha256', canonical, 'base64url').slice(0, INTENT_DIGEST_LENGTH);
}
