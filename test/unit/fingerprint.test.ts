import { describe, expect, it } from 'vitest';
import { canonicalArguments, fingerprint } from '../../packages/idem/src/core/fingerprint.js';

function rejectionCode(args: Record<string, unknown>): string | undefined {
  try {
    fingerprint(args);
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

describe('fingerprint', () => {
  it('is the SHA-256 hex digest of the canonical JSON text', () => {
    expect(canonicalArguments({ body: 'hello' })).toBe('{"body":"hello"}');
    // sha256('{"body":"hello"}')
    expect(fingerprint({ body: 'hello' })).toBe(
      '1da63ae1d1c64f4549cece58555b23ef253aa7bb2c5ca6c48c12918863cff51a',
    );
  });

  it('does not depend on key order, at any depth', () => {
    const a = { title: 't', body: 'b', tags: ['x', 'y'], meta: { z: 1, a: { d: 2, c: 3 } } };
    const b = { meta: { a: { c: 3, d: 2 }, z: 1 }, tags: ['x', 'y'], body: 'b', title: 't' };
    expect(fingerprint(a)).toBe(fingerprint(b));
    expect(canonicalArguments(b)).toBe(
      '{"body":"b","meta":{"a":{"c":3,"d":2},"z":1},"tags":["x","y"],"title":"t"}',
    );
  });

  it('changes when any value changes', () => {
    const base = { body: 'b', count: 1, flag: true, tags: ['x', 'y'], meta: { n: null } };
    const variants: Record<string, unknown>[] = [
      { ...base, body: 'B' },
      { ...base, body: 'b ' },
      { ...base, count: 2 },
      { ...base, count: '1' },
      { ...base, flag: false },
      { ...base, tags: ['y', 'x'] },
      { ...base, tags: ['x', 'y', 'z'] },
      { ...base, meta: { n: 0 } },
      { ...base, meta: {} },
      { ...base, extra: null },
    ];
    const seen = new Set([fingerprint(base)]);
    for (const variant of variants) seen.add(fingerprint(variant));
    expect(seen.size).toBe(variants.length + 1);
  });

  it('treats the same number written differently on the wire as equal (RFC 8785)', () => {
    const forms = ['1', '1.0', '1.00', '1e0', '10e-1', '0.1e1'];
    const prints = forms.map((form) => fingerprint(JSON.parse(`{"n":${form}}`) as Record<string, unknown>));
    expect(new Set(prints).size).toBe(1);
    expect(canonicalArguments(JSON.parse('{"n":1.0}') as Record<string, unknown>)).toBe('{"n":1}');
    expect(canonicalArguments({ n: -0 })).toBe('{"n":0}');
    expect(canonicalArguments({ n: 1e21 })).toBe('{"n":1e+21}');
    expect(canonicalArguments({ n: 1e-7 })).toBe('{"n":1e-7}');
    expect(canonicalArguments({ n: 100 })).toBe(
      canonicalArguments(JSON.parse('{"n":1E2}') as Record<string, unknown>),
    );
  });

  it('sorts keys by UTF-16 code units and keeps strings exact', () => {
    // The example of RFC 8785 section 3.2.3: UTF-16 code units, so U+20AC sorts before a surrogate pair.
    const args = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh",' +
        '"1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control",' +
        '"\\u00f6":"Latin Small Letter O With Diaeresis"}',
    ) as Record<string, unknown>;
    expect(canonicalArguments(args)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    expect(canonicalArguments({ s: '\u20ac\n"\\' })).toBe('{"s":"\u20ac\\n\\"\\\\"}');
  });

  it('treats an undefined property as absent', () => {
    expect(fingerprint({ body: 'b', title: undefined })).toBe(fingerprint({ body: 'b' }));
  });

  it('rejects values JSON cannot represent with invalid_argument', () => {
    expect(rejectionCode({ n: 10n })).toBe('invalid_argument');
    expect(rejectionCode({ nested: { n: [1n] } })).toBe('invalid_argument');
    expect(rejectionCode({ n: Number.NaN })).toBe('invalid_argument');
    expect(rejectionCode({ n: Number.POSITIVE_INFINITY })).toBe('invalid_argument');
    expect(rejectionCode({ n: [Number.NEGATIVE_INFINITY] })).toBe('invalid_argument');
    expect(rejectionCode({ s: '\ud800' })).toBe('invalid_argument');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(rejectionCode(circular)).toBe('invalid_argument');
  });

  it('keeps the driver error as the cause of invalid_argument', () => {
    expect(() => canonicalArguments({ n: 10n })).toThrow(
      expect.objectContaining({ code: 'invalid_argument', cause: expect.any(Error) }),
    );
  });

  it('rejects functions, Map, Set and class instances instead of flattening them', () => {
    expect(rejectionCode({ f: () => 1 })).toBe('invalid_argument');
    expect(rejectionCode({ a: [() => 1] })).toBe('invalid_argument');
    expect(rejectionCode({ m: new Map([[1, 2]]) })).toBe('invalid_argument');
    expect(rejectionCode({ s: new Set([1]) })).toBe('invalid_argument');
    expect(rejectionCode({ r: /x/ })).toBe('invalid_argument');
    expect(rejectionCode({ a: [1, undefined] })).toBe('invalid_argument');
  });
});
