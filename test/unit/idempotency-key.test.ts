import { describe, expect, it } from 'vitest';
import { MAX_KEY_LENGTH, validateIdempotencyKey } from '../../packages/idem/src/core/idempotency-key.js';

function rejectionCode(key: unknown): string | undefined {
  try {
    validateIdempotencyKey(key);
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

describe('validateIdempotencyKey', () => {
  it('accepts 1 to 255 printable ASCII characters and returns the key unchanged', () => {
    const allPrintable = Array.from({ length: 0x7e - 0x20 + 1 }, (_, i) =>
      String.fromCharCode(0x20 + i),
    ).join('');
    const accepted = [
      'a',
      ' ',
      '~',
      '0190c8a2-7b1e-7cc3-9f41-3d1a1c2b4e5f',
      '01HZY3Q7K9M2N4P6R8S0T1V3W5',
      allPrintable,
      'x'.repeat(MAX_KEY_LENGTH),
    ];
    for (const key of accepted) expect(validateIdempotencyKey(key)).toBe(key);
    expect(MAX_KEY_LENGTH).toBe(255);
  });

  it('rejects the empty string and keys longer than 255 characters', () => {
    expect(rejectionCode('')).toBe('invalid_argument');
    expect(rejectionCode('x'.repeat(256))).toBe('invalid_argument');
    expect(rejectionCode('x'.repeat(10_000))).toBe('invalid_argument');
  });

  it('rejects control characters anywhere in the key', () => {
    for (const control of ['\0', '\t', '\n', '\r', '\x1b', '\x1f', '\x7f']) {
      expect(rejectionCode(`key${control}`), JSON.stringify(control)).toBe('invalid_argument');
      expect(rejectionCode(`${control}key`), JSON.stringify(control)).toBe('invalid_argument');
    }
  });

  it('rejects non-ASCII and invisible characters', () => {
    for (const key of ['clé', 'key\u00a0', 'key\u200b', 'ключ', 'key😀', '\ufeffkey']) {
      expect(rejectionCode(key), key).toBe('invalid_argument');
    }
  });

  it('rejects values that are not strings', () => {
    for (const key of [undefined, null, 42, 0, true, {}, ['key'], Symbol('key'), 10n, new String('key')]) {
      expect(rejectionCode(key), String(typeof key)).toBe('invalid_argument');
    }
  });

  it('throws an IdemError that is not retryable', () => {
    expect(() => validateIdempotencyKey('')).toThrow(
      expect.objectContaining({ name: 'IdemError', code: 'invalid_argument', retryable: false }),
    );
  });
});
