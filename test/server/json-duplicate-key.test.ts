import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDuplicateKey } from '../../packages/idem-cli/src/server/json-duplicate-key.js';

describe('jsonDuplicateKey', () => {
  it('finds the first key given twice in one object, at any depth, with its place', () => {
    expect(jsonDuplicateKey('{"a":1,"b":2,"a":3}')).toEqual({
      position: { line: 1, column: 14 },
      path: [],
      first: 0,
      second: 2,
      key: 'a',
    });
    expect(jsonDuplicateKey('{\n  "t": {"x": 1,\n    "x": 2}}')).toMatchObject({
      position: { line: 3, column: 5 },
      path: [0],
      first: 0,
      second: 1,
      key: 'x',
    });
    expect(jsonDuplicateKey('[1, {"k": [true, null, -1.5e3]}, {"k": 1, "k": 2}]')).toMatchObject({
      path: [2],
      key: 'k',
    });
    // Keys are compared as JSON.parse reads them: an escape spells the same key.
    expect(jsonDuplicateKey('{"a\\u0062": 1, "ab" : 2}')).toMatchObject({ key: 'ab', first: 0, second: 1 });
    expect(jsonDuplicateKey('{"\\"": 1, "\\\\": 2, "\\"": 3}')).toMatchObject({ key: '"', second: 2 });
  });

  it('finds nothing in JSON without repeated keys, however it is spaced', () => {
    for (const text of [
      '{}',
      '[]',
      '"x"',
      '7',
      '  {"a" : [ ] , "b":{ } , "c": "}"}  ',
      '{"a":{"a":{"a":1}}}',
    ]) {
      expect(jsonDuplicateKey(text), text).toBeUndefined();
    }
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 0, 2, '\t'), (value, space) => {
        expect(jsonDuplicateKey(JSON.stringify(value, null, space))).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('finds a key repeated anywhere in generated JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), fc.jsonValue(), (inner, key, other) => {
        const text = JSON.stringify({ wrap: [inner, { [key]: other }] }).replace(
          /\}\]\}$/,
          () => `, ${JSON.stringify(key)}: 1}]}`,
        );
        expect(jsonDuplicateKey(text)).toMatchObject({ key, path: [0, 1], first: 0, second: 1 });
      }),
      { numRuns: 300 },
    );
  });
});
