import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { schemaSample } from '../../packages/idem-cli/src/cli/check/schema-sample.js';
import { fill, hasUnique, newUnique } from '../../packages/idem-cli/src/cli/check/unique-template.js';

// ajv-formats is CommonJS: under NodeNext its function arrives as the default export's `default`.
const addFormats = (addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv }).default;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

type Schema = Record<string, unknown>;

const FORMATS = [
  'email',
  'uri',
  'uri-reference',
  'uuid',
  'date-time',
  'date',
  'time',
  'hostname',
  'ipv4',
  'ipv6',
  'duration',
  'json-pointer',
  'regex',
];
/** Patterns a tool schema commonly has, each met by one of the sampler's candidates. */
const PATTERNS = ['^[a-z0-9 -]+$', '^idem', '^[\\x20-\\x7e]+$', '^[a-z0-9_]+$', '^[a-f0-9]+$', '\\S'];
const NAMES = ['name', 'title', 'body', 'count', 'tags', 'kind', 'path', 'flag'];

const stringSchema: fc.Arbitrary<Schema> = fc.oneof(
  fc
    .record(
      {
        type: fc.constant('string'),
        minLength: fc.integer({ min: 0, max: 30 }),
        maxLength: fc.integer({ min: 0, max: 60 }),
      },
      { requiredKeys: ['type'] },
    )
    .map((s) =>
      s.minLength !== undefined && s.maxLength !== undefined && s.maxLength < s.minLength
        ? { ...s, maxLength: s.minLength }
        : s,
    ),
  fc.record({
    type: fc.constant('string'),
    pattern: fc.constantFrom(...PATTERNS),
    maxLength: fc.integer({ min: 40, max: 300 }),
  }),
  fc.record({ type: fc.constant('string'), format: fc.constantFrom(...FORMATS) }),
);

const integerSchema: fc.Arbitrary<Schema> = fc
  .record(
    {
      type: fc.constantFrom('integer', 'number'),
      minimum: fc.integer({ min: -50, max: 50 }),
      width: fc.integer({ min: 2, max: 100 }),
      exclusive: fc.boolean(),
      multipleOf: fc.integer({ min: 1, max: 4 }),
      upper: fc.boolean(),
    },
    { requiredKeys: ['type', 'width', 'exclusive', 'upper'] },
  )
  .map(({ width, exclusive, upper, ...s }) => {
    const out: Schema = { ...s };
    if (s.multipleOf !== undefined && width < s.multipleOf * 2) delete out.multipleOf;
    if (typeof s.minimum === 'number') {
      if (upper) out[exclusive ? 'exclusiveMaximum' : 'maximum'] = s.minimum + width;
      if (exclusive) {
        out.exclusiveMinimum = s.minimum;
        delete out.minimum;
      }
    }
    return out;
  });

/**
 * Whether a value has an own key such as `valueOf` or `toString`. The judge cannot compare such a
 * `const`: ajv's deep equality calls `a.valueOf()` when `valueOf` is not Object.prototype's, and
 * throws on `{"valueOf": false}` (fast-check found it). The sampler returns the const as it is.
 */
function shadowsObjectPrototype(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(shadowsObjectPrototype);
  return (
    Object.keys(value).some((key) => key in Object.prototype) ||
    Object.values(value).some(shadowsObjectPrototype)
  );
}

const leaf: fc.Arbitrary<Schema> = fc.oneof(
  stringSchema,
  integerSchema,
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc
    .uniqueArray(fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), { minLength: 1, maxLength: 4 })
    .map((e) => ({
      enum: e,
    })),
  fc
    .jsonValue({ maxDepth: 1 })
    .filter((c) => !shadowsObjectPrototype(c))
    .map((c) => ({ const: c })),
  fc.constant({}),
);

const { schema } = fc.letrec<{ schema: Schema; object: Schema; array: Schema }>((tie) => ({
  schema: fc.oneof({ maxDepth: 3, depthSize: 'small' }, leaf, tie('object'), tie('array'), tie('object')),
  object: fc.dictionary(fc.constantFrom(...NAMES), tie('schema'), { maxKeys: 4 }).chain((properties) =>
    fc.record({
      type: fc.constant('object'),
      properties: fc.constant(properties),
      required: fc.subarray(Object.keys(properties)),
      additionalProperties: fc.boolean(),
    }),
  ),
  array: fc.oneof(
    fc
      .record({
        type: fc.constant('array'),
        items: tie('schema'),
        minItems: fc.integer({ min: 0, max: 3 }),
        extra: fc.integer({ min: 0, max: 3 }),
      })
      .map(({ extra, ...s }) => ({ ...s, maxItems: s.minItems + extra })),
    // uniqueItems where the items can differ: plain strings or unbounded integers.
    fc.record({
      type: fc.constant('array'),
      items: fc.constantFrom(
        { type: 'string' },
        { type: 'integer', minimum: 0 },
        { type: 'string', maxLength: 60 },
      ),
      minItems: fc.integer({ min: 0, max: 4 }),
      uniqueItems: fc.constant(true),
    }),
  ),
}));

/** The schema wrapped the way tools declare input: an object, some of it behind `$ref` or `anyOf`. */
const toolSchema: fc.Arbitrary<Schema> = fc.oneof(
  schema.map((s) => ({ type: 'object', properties: { value: s }, required: ['value'] })),
  schema.map((s) => ({
    type: 'object',
    definitions: { Part: s },
    properties: { ref: { $ref: '#/definitions/Part' } },
    required: ['ref'],
  })),
  schema.map((s) => ({
    type: 'object',
    properties: { maybe: { anyOf: [s, { type: 'null' }] } },
    required: ['maybe'],
  })),
  fc.tuple(schema, schema).map(([a, b]) => ({
    allOf: [
      { type: 'object', properties: { a }, required: ['a'] },
      { type: 'object', properties: { b }, required: ['b'] },
    ],
  })),
);

describe('schemaSample', () => {
  it('builds a value every fill of which is valid for the schema (fast-check, ajv as the judge)', () => {
    fc.assert(
      fc.property(toolSchema, (input) => {
        const sample = schemaSample(input);
        expect(sample.unmet).toEqual([]);
        const validate = ajv.compile(input);
        for (const unique of [newUnique(), newUnique()]) {
          const filled = fill(sample.value, unique);
          if (!validate(filled)) {
            throw new Error(`invalid sample ${JSON.stringify(filled)}: ${ajv.errorsText(validate.errors)}`);
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('puts {{unique}} in a required string that has room for it, so that two actions differ', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            minLength: fc.integer({ min: 0, max: 20 }),
            maxLength: fc.integer({ min: 40, max: 500 }),
            pattern: fc.constantFrom(...PATTERNS),
            format: fc.constantFrom('email', 'uri', 'uuid', 'hostname', 'uri-reference'),
          },
          { requiredKeys: [] },
        ),
        (constraints) => {
          const input = {
            type: 'object',
            properties: { title: { type: 'string', ...constraints }, done: { type: 'boolean' } },
            required: ['title'],
          };
          const sample = schemaSample(input);
          if (constraints.format !== undefined && constraints.pattern !== undefined) return; // may exclude each other
          expect(sample.unmet).toEqual([]);
          expect(hasUnique(sample.value)).toBe(true);
          expect(Object.keys(sample.value as object)).toEqual(['title']); // optional flags left out
        },
      ),
    );
  });

  it('reports what it could not meet instead of pretending', () => {
    expect(schemaSample({ type: 'string', pattern: '^[A-Z]{3}$' }).unmet).toEqual([
      '$: no string meets pattern ^[A-Z]{3}$',
    ]);
    expect(
      schemaSample({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } }, required: ['a'] }).unmet,
    ).toEqual(['$.a: $ref #/$defs/missing not found']);
    expect(schemaSample({ type: 'integer', minimum: 3, maximum: 2 }).unmet).toEqual([
      '$: no number meets the bounds',
    ]);
  });

  it('samples a real tool schema (server-memory create_entities) as one entity with varying strings', () => {
    const input = {
      type: 'object',
      properties: {
        entities: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              entityType: { type: 'string' },
              observations: { type: 'array', items: { type: 'string' } },
            },
            required: ['name', 'entityType', 'observations'],
            additionalProperties: false,
          },
        },
      },
      required: ['entities'],
      additionalProperties: false,
    };
    expect(schemaSample(input)).toEqual({
      value: {
        entities: [
          {
            name: 'idem check {{unique}}',
            entityType: 'idem check {{unique}}',
            observations: ['idem check {{unique}}'],
          },
        ],
      },
      unmet: [],
    });
  });
});
