import { describe, expect, it } from 'vitest';
import { nulArgumentError } from '../../src/core/nul-argument-error.js';

describe('nulArgumentError', () => {
  it('finds U+0000 in any string at any depth and names its path, never the value', () => {
    const cases: [unknown, string][] = [
      [{ body: 'a\u0000b' }, 'body'],
      [{ items: ['ok', { name: '\u0000' }] }, 'items.1.name'],
      [{ meta: { 'a\u0000b': 1 } }, 'meta.(a key)'],
      ['\u0000', 'arguments'],
    ];
    for (const [args, path] of cases) {
      const error = nulArgumentError(args);
      expect(error, path).toMatchObject({
        code: 'invalid_argument',
        retryable: false,
        message: `invalid arguments: ${path}: must not contain the character U+0000 (NUL)`,
      });
      expect(error?.message).not.toContain('\u0000');
    }
    expect(nulArgumentError('w\u0000', 'workspace')?.message).toBe(
      'invalid arguments: workspace: must not contain the character U+0000 (NUL)',
    );
  });

  it('accepts everything else, other control characters included', () => {
    for (const args of [{ body: 'a\u0001b\u007f\u2028' }, { n: 1, b: true, z: null, list: [] }, 'plain', 7]) {
      expect(nulArgumentError(args)).toBeUndefined();
    }
  });
});
