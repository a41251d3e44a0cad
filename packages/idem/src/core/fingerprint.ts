import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { IdemError } from './errors.js';

/**
 * The canonical form of validated tool arguments (RFC 8785 JSON Canonicalization Scheme), without
 * the idempotency key. Two calls carry "the same arguments" exactly when these strings are equal.
 */
export function canonicalArguments(args: Record<string, unknown>): string {
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
