import { describe, expect, it } from 'vitest';
import { unstorableArgumentError } from '../../packages/idem/src/core/unstorable-argument-error.js';
import { unstorablePrincipalError, unstorableText } from '../../packages/idem/src/core/unstorable-text.js';

const NUL = 'must not contain the character U+0000 (NUL)';
const LONE = 'must be well-formed Unicode (it contains a lone surrogate, U+D800 to U+DFFF without its pair)';

describe('unstorableArgumentError', () => {
  it('finds U+0000 or a lone surrogate in any string at any depth and names its path, never the value', () => {
    const cases: [unknown, string, string][] = [
      [{ body: 'a\u0000b' }, 'body', NUL],
      [{ items: ['ok', { name: '\u0000' }] }, 'items.1.name', NUL],
      [{ meta: { 'a\u0000b': 1 } }, 'meta.(a key)', NUL],
      ['\u0000', 'arguments', NUL],
      [{ body: 'mallory\ud800' }, 'body', LONE],
      [{ body: '\udfffx' }, 'body', LONE],
      [{ items: ['ok', { name: 'a\ud83d' }] }, 'items.1.name', LONE],
      [{ meta: { '\udc00': 1 } }, 'meta.(a key)', LONE],
      // A pair in the wrong order is two lone surrogates.
      [{ body: '\ude00\ud83d' }, 'body', LONE],
    ];
    for (const [args, path, problem] of cases) {
      const error = unstorableArgumentError(args);
      expect(error, path).toMatchObject({
        code: 'invalid_argument',
        retryable: false,
        message: `invalid arguments: ${path}: ${problem}`,
      });
      expect(error?.message).not.toContain('\u0000');
      expect(error?.message).not.toMatch(/[\uD800-\uDFFF]/u);
    }
    expect(unstorableArgumentError('w\u0000', 'workspace')?.message).toBe(
      `invalid arguments: workspace: ${NUL}`,
    );
    expect(unstorableArgumentError('w\udfff', 'workspace')?.message).toBe(
      `invalid arguments: workspace: ${LONE}`,
    );
  });

  it('accepts everything else: other control characters, U+FFFD, and surrogate pairs (emoji)', () => {
    for (const args of [
      { body: 'a\u0001b\u007f\u2028' },
      { n: 1, b: true, z: null, list: [] },
      { body: 'mallory\ufffd', emoji: '\ud83d\ude00', [`k\ud83d\ude00`]: ['\u{10ffff}'] },
      'plain',
      7,
    ]) {
      expect(unstorableArgumentError(args)).toBeUndefined();
    }
  });
});

describe('unstorablePrincipalError', () => {
  it('refuses a principal with U+0000 or a lone surrogate as forbidden, never quoting it', () => {
    for (const [principal, problem] of [
      ['nul\u0000', NUL],
      ['mallory\ud800', LONE],
      ['mallory\udfff', LONE],
    ] as const) {
      const error = unstorablePrincipalError(principal);
      expect(error).toMatchObject({
        code: 'forbidden',
        retryable: false,
        message: `the authenticated principal cannot be used: it ${problem}`,
      });
      expect(error?.message).not.toContain('mallory');
    }
    expect(unstorablePrincipalError('mallory\ud83d\ude00')).toBeUndefined();
    expect(unstorablePrincipalError('mallory\ufffd')).toBeUndefined();
    expect(unstorableText('ws\ud800')).toBe(LONE);
    expect(unstorableText('ws')).toBeUndefined();
  });
});
