import type { z } from 'zod';

/** The JSON Schema targets of the Standard JSON Schema spec that a tool listing asks for. */
export interface JsonSchemaOptions {
  readonly target: 'draft-2020-12' | 'draft-07' | 'openapi-3.0' | (object & string);
  readonly libraryOptions?: Record<string, unknown> | undefined;
}

/**
 * A Standard Schema (https://standardschema.dev, with its JSON Schema extension) that advertises
 * the tool's full argument schema but accepts any value. MCP servers (SDK v2's McpServer, FastMCP)
 * turn their own validation failures into uncoded text; with this schema their validation always
 * passes and Idem validates the arguments itself, answering `invalid_argument` with a code.
 */
export interface AdvertisedSchema {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: 'idem';
    readonly validate: (value: unknown) => { readonly value: unknown };
    readonly jsonSchema: {
      readonly input: (options: JsonSchemaOptions) => Record<string, unknown>;
      readonly output: (options: JsonSchemaOptions) => Record<string, unknown>;
    };
    readonly types?: { readonly input: unknown; readonly output: unknown };
  };
}

/** Wraps `strict` (the schema Idem validates with) so that only its JSON Schema is used. */
export function advertisedSchema(strict: z.ZodType): AdvertisedSchema {
  const converter = strict['~standard'].jsonSchema;
  return {
    '~standard': {
      version: 1,
      vendor: 'idem',
      validate: (value) => ({ value }),
      jsonSchema: {
        input: (options) => converter.input(options),
        output: (options) => converter.input(options),
      },
    },
  };
}
