import { IdemError } from './errors.js';

export const MAX_KEY_LENGTH = 255;

// Printable ASCII, space included: what UUIDs, ULIDs and hand-written keys use, and nothing that a
// terminal, a log line or a URL could render ambiguously (no control or invisible characters).
const PRINTABLE = /^[\x20-\x7e]+$/;

/** Returns the key if it is 1 to 255 printable ASCII characters, else throws `invalid_argument`. */
export function validateIdempotencyKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new IdemError('invalid_argument', 'idempotency_key must be a string');
  }
  if (key.length < 1 || key.length > MAX_KEY_LENGTH) {
    throw new IdemError('invalid_argument', `idempotency_key must be 1 to ${MAX_KEY_LENGTH} characters`);
  }
  if (!PRINTABLE.test(key)) {
    throw new IdemError(
      'invalid_argument',
      'idempotency_key must contain only printable ASCII characters (U+0020 to U+007E)',
    );
  }
  return key;
}
