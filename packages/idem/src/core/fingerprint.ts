import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { IdemError } from './errors.js';
import { fingerprintedArguments, type FingerprintSelection } from './fingerprint-selection.js';
import { plainCanonicalJson } from './plain-canonical-json.js';
import { unstorableArgumentError } from './unstorable-argument-error.js';

/**
 * The canonical form of validated tool arguments (RFC 8785 JSON Canonicalization Scheme), without
 * the idempotency key. Two calls carry "the same arguments" exactly when these strings are equal.
 */
export function canonicalArguments(args: Record<string, unknown>): string {
  const plain = plainCanonicalJson(args);
  if (plain !== undefined) return plain;
  assertPlainJson(args, 'arguments');
  let text: string | undefined;
  try {
    text = canonicalize(args);
  } catch (cause) {
    throw new IdemError('invalid_argument', 'arguments are not representable as JSON', { cause });
  }
  if (text === undefined) throw new IdemError('invalid_argument', 'arguments are not representable as JSON');
  return text;
}

/**
 * SHA-256 (hex) of the canonical arguments (UTF-8): what a receipt and a tombstone keep of the
 * request. One-shot `hash`: the same digest as a `Hash` object, at a fraction of its cost per call.
 */
export function fingerprint(args: Record<string, unknown>): string {
  return hash('sha256', canonicalArguments(args), 'hex');
}

/**
 * A call's fingerprint: SHA-256 (hex) of the canonical text of the arguments `selection` covers
 * (all of them without one). First checks every string and key of ALL the arguments, covered or
 * not, can be stored on every engine: throws `unstorableArgumentError`'s `invalid_argument` naming
 * the path when one cannot; then throws `invalid_argument` when the covered arguments are not
 * plain JSON. Plain arguments (nearly every call) take one pass for all of it (plainCanonicalJson).
 */
export function callFingerprint(
  args: Record<string, unknown>,
  selection: FingerprintSelection | undefined,
): string {
  const whole = plainCanonicalJson(args);
  if (whole === undefined) {
    const unstorable = unstorableArgumentError(args);
    if (unstorable !== undefined) throw unstorable;
  } else if (selection === undefined) {
    return hash('sha256', whole, 'hex');
  }
  return fingerprint(fingerprintedArguments(args, selection));
}

/**
 * Rejects what JSON cannot carry faithfully (functions, symbols, Map, Set, class instances, holes),
 * which the canonicalizer would otherwise drop or flatten into `{}`, making different arguments equal.
 */
function assertPlainJson(value: unknown, path: string, ancestors = new Set<object>()): void {
  const fail = () => {
    throw new IdemError('invalid_argument', `${path} is not representable as JSON`);
  };
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'bigint': // rejected by the canonicalizer, with its own message
      return;
    case 'number':
      if (!Number.isFinite(value)) fail();
      return;
    case 'object':
      if (value === null || ancestors.has(value)) return; // cycles: the canonicalizer rejects them
      ancestors.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i += 1) {
          if (value[i] === undefined) fail();
          assertPlainJson(value[i], `${path}[${i}]`, ancestors);
        }
        ancestors.delete(value);
        return;
      }
      {
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) fail();
        for (const [key, item] of Object.entries(value)) {
          if (item !== undefined) assertPlainJson(item, `${path}.${key}`, ancestors);
        }
      }
      ancestors.delete(value);
      return;
    default:
      fail();
  }
}
