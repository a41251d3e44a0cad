import { IdemError } from './errors.js';

// In a `u` regular expression a surrogate pair is one code point, so this matches lone surrogates only.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Why `text` cannot be stored the same on every engine, as the end of a sentence ("must not ..."),
 * or undefined when it can. Two kinds of string are refused:
 * - U+0000: SQLite stores it, PostgreSQL refuses it (text and jsonb cannot hold NUL).
 * - a lone surrogate (U+D800 to U+DFFF without its pair), i.e. not well-formed Unicode: PostgreSQL
 *   stores every one of them as U+FFFD, so `mallory\uD800` and `mallory\uDFFF` would become one
 *   principal, and SQLite reads them back as replacement characters.
 * Every other string, surrogate pairs (emoji) included, is stored and read back unchanged.
 */
export function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the character U+0000 (NUL)';
  if (LONE_SURROGATE.test(text)) {
    return 'must be well-formed Unicode (it contains a lone surrogate, U+D800 to U+DFFF without its pair)';
  }
  return undefined;
}

/**
 * A `forbidden` error when the principal a call acts as cannot be stored faithfully (see
 * unstorableText); otherwise undefined. The principal comes from the credential, not from the
 * caller's arguments, so the caller cannot fix it: the credential is unusable. Never quotes it.
 */
export function unstorablePrincipalError(principal: string): IdemError | undefined {
  const problem = typeof principal === 'string' ? unstorableText(principal) : 'is not a string';
  if (problem === undefined) return undefined;
  return new IdemError('forbidden', `the authenticated principal cannot be used: it ${problem}`, {
    nextAction: 'The credential names a principal that cannot act; use another credential. Nothing was done.',
  });
}
