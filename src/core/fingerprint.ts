import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { IdemError } from './errors.js';

/**
 * The canonical form of validated tool arguments (RFC 8785 JSON Canonicalization Scheme), without
 * the idempotency key. Two calls carry "the same arguments" exactly when these strings are equal.
 */
export function canonicalArguments(args: Record<string, unknown>): string {
  let text: string | undefined;
  try {
    text = canonicalize(args);
  } catch (cause) {
    throw new IdemError('invalid_argument', 'arguments are not representable as JSON', { cause });
  }
  if (text === undefined) throw new IdemError('invalid_argument', 'arguments are not representable as JSON');
  return text;
}

/** SHA-256 (hex) of the canonical arguments: what a receipt and a tombstone keep of the request. */
export function fingerprint(args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalArguments(args)).digest('hex');
}
