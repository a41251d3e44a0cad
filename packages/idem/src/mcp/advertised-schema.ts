import type { z } from 'zod';

/** The JSON Schema targets of the Standard JSON Schema spec that a tool listing asks for. */
export interface JsonSchemaOptions {
  readonly target: 'draft-2020-12' | 'draft-07' | 'openapi-3.0' | (object & string);
  readonly libraryOptions?: Record<string, unknown> | undefined;
}

/** What a Standard Schema's `validate` returns (https://standardschema.dev). */
export type StandardResult =
  | { readonly value: unknown; readonly issues?: undefined }
  | {
      readonly issues: ReadonlyArray<{
        readonly message: string;
        readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
      }>;
    };

/** A Standard Schema with the Standard JSON Schema extension, as MCP servers take schemas. */
export interface JsonStandardSchema {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult | Promise<StandardResult>;
    readonly jsonSchema: {
      readonly input: (options: JsonSchemaOptions) => Record<string, unknown>;
      readonly output: (options: JsonSchemaOptions) => Record<string, unknown>;
    };
    readonly types?: { readonly input: unknown; readonly output: unknown };
  };
}

/**
 * The tool's full argument schema as a Standard Schema that accepts any value. MCP servers (SDK
 * v2's McpServer, FastMCP) turn their own validation failures into uncoded text; with this schema
 * their validation always passes and Idem validates the arguments itself, answering
 * `invalid_argument` with a code. Only its JSON Schema is the strict schema's.
 */
export interface AdvertisedSchema extends JsonStandardSchema {
  readonly '~standard': JsonStandardSchema['~standard'] & {
    readonly vendor: 'idem';
    readonly validate: (value: unknown) => { readonly value: unknown };
  };
}

/** Wraps `strict` (the schema Idem validates with) so that only its JSON Schema is used. */
export function advertisedSchema(strict: z.ZodType): AdvertisedSchema {
  const input = memoized((options) => strict['~standard'].jsonSchema.input(options));
  return {
    '~standard': {
      version: 1,
      vendor: 'idem',
      validate: (value) => ({ value }),
      jsonSchema: { input, output: input },
    },
  };
}

const cached = new WeakMap<z.ZodType, JsonStandardSchema>();

/**
 * `schema`, validating as itself, with its JSON Schema conversions computed once per target.
 * Converting a zod 4 schema takes about 0.1 ms, and a server that builds an McpServer per request
 * would otherwise convert a tool's output schema on every call.
 */
export function withCachedJsonSchema(schema: z.ZodType): JsonStandardSchema {
  const known = cached.get(schema);
  if (known !== undefined) return known;
  const standard = schema['~standard'];
  const wrapped: JsonStandardSchema = {
    '~standard': {
      version: 1,
      vendor: standard.vendor,
      validate: (value) => standard.validate(value),
      jsonSchema: {
        input: memoized((options) => standard.jsonSchema.input(options)),
        output: memoized((options) => standard.jsonSchema.output(options)),
      },
    },
  };
  cached.set(schema, wrapped);
  return wrapped;
}

function memoized(
  convert: (options: JsonSchemaOptions) => Record<string, unknown>,
): (options: JsonSchemaOptions) => Record<string, unknown> {
  const byTarget = new Map<string, Record<string, unknown>>();
  return (options) => {
    const known = byTarget.get(options.target);
    if (known !== undefined) return known;
    const converted = convert(options);
    byTarget.set(options.target, converted);
    return converted;
  };
}
