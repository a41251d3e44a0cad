import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  callFingerprint,
  canonicalArguments,
  fingerprint,
} from '../../packages/idem/src/core/fingerprint.js';
import { plainCanonicalJson } from '../../packages/idem/src/core/plain-canonical-json.js';
import { unstorableArgumentError } from '../../packages/idem/src/core/unstorable-argument-error.js';

/** What the careful path (before the one-pass writer) answered: an error code and message, or the text. */
function careful(args: Record<string, unknown>): { text?: string; error?: string } {
  const unstorable = unstorableArgumentError(args);
  if (unstorable !== undefined) return { error: `${unstorable.code}: ${unstorable.message}` };
  try {
    return { text: canonicalize(args) as string };
  } catch (error) {
    return { error: String(error) };
  }
}

function outcome(run: () => string): { value?: string; error?: string } {
  try {
    return { value: run() };
  } catch (error) {
    const e = error as { code?: string; message?: string };
    return { error: `${e.code}: ${e.message}` };
  }
}

// Strings from a small alphabet that holds every case that matters: NUL, both halves of a
// surrogate pair alone and together, characters JSON escapes, and plain ones.
const tricky = fc
  .array(
    fc.constantFrom(
      'a',
      'Z',
      '1',
      ' ',
      '\u0000',
      '\uD83D',
      '\uDE00',
      '\uD83D\uDE00',
      '"',
      '\\',
      '\n',
      '\u20ac',
      '\u007f',
    ),
    {
      maxLength: 6,
    },
  )
  .map((parts) => parts.join(''));

const { node: value } = fc.letrec((tie) => ({
  leaf: fc.oneof(
    tricky,
    fc.string(),
    fc.double(),
    fc.integer(),
    fc.constantFrom(true, false, null, -0, 1e21, 1e-7, Number.NaN, Infinity),
  ),
  node: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('array'), tie('object')),
  array: fc.array(tie('node'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(tricky, fc.string()), fc.oneof(tie('node'), fc.constant(undefined)), {
    maxKeys: 4,
  }),
}));
const args = fc.dictionary(fc.oneof(tricky, fc.string()), value, { maxKeys: 5 });

describe('plainCanonicalJson', () => {
  it('answers exactly the canonicalizer’s text, or nothing where a careful check refuses', () => {
    fc.assert(
      fc.property(args, (a) => {
        const fast = plainCanonicalJson(a);
        const slow = careful(a);
        if (fast === undefined) expect(slow.error).toBeDefined();
        else expect(slow).toEqual({ text: fast });
      }),
      { numRuns: 3000 },
    );
  });

  it('answers every plain, storable JSON value (the fast path is taken, not skipped)', () => {
    const plain = fc
      .json()
      .map((text) => ({ v: JSON.parse(text) as unknown }))
      .filter((a) => careful(a).error === undefined);
    fc.assert(
      fc.property(plain, (a) => {
        expect(plainCanonicalJson(a)).toBe(canonicalize(a));
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves odd values to the careful checks', () => {
    class Point {
      x = 1;
    }
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    let deep: Record<string, unknown> = { end: true };
    for (let i = 0; i < 100; i += 1) deep = { d: deep };
    const odd: Record<string, unknown>[] = [
      { when: new Date(0) },
      { p: new Point() },
      { m: new Map() },
      { f: () => 1 },
      { s: Symbol('s') },
      { b: 1n },
      { list: [1, undefined] },
      // eslint-disable-next-line no-sparse-arrays -- a hole, on purpose
      { list: [1, , 3] },
      { n: Number.NaN },
      { j: { toJSON: () => 'x' } },
      { t: 'a\u0000b' },
      { t: 'lone \uD800' },
      { 'key\u0000': undefined },
      cyclic,
      deep,
    ];
    for (const a of odd) expect(plainCanonicalJson(a), JSON.stringify(Object.keys(a))).toBeUndefined();
    // Deep but plain: the careful path still answers it, with the same text.
    expect(canonicalArguments(deep)).toBe(canonicalize(deep));
  });

  it('keeps the fingerprint’s answers and errors the same as the checks it replaces', () => {
    const cases: Record<string, unknown>[] = [
      { body: 'hello' },
      { body: 'a\u0000b' },
      { nested: { list: ['ok', 'lone \uDC00'] } },
      { 'k\u0000': undefined },
      { when: new Date(0) },
      { n: Number.POSITIVE_INFINITY },
      { emoji: '\uD83D\uDE00', n: -0 },
    ];
    for (const a of cases) {
      const before = outcome(() => {
        const unstorable = unstorableArgumentError(a);
        if (unstorable !== undefined) throw unstorable;
        return fingerprint(a);
      });
      expect(
        outcome(() => callFingerprint(a, undefined)),
        JSON.stringify(before),
      ).toEqual(before);
    }
    // Under a selection, an uncovered field is still checked, and only covered ones are hashed.
    expect(
      outcome(() => callFingerprint({ body: 'b', note: 'x\u0000' }, { include: ['body'] })).error,
    ).toMatch(/^invalid_argument: invalid arguments: note:/);
    expect(callFingerprint({ body: 'b', note: 'x' }, { include: ['body'] })).toBe(fingerprint({ body: 'b' }));
    expect(callFingerprint({ body: 'b', note: 'x' }, { exclude: ['note'] })).toBe(fingerprint({ body: 'b' }));
  });
});
