/** A tool's JSON Schema for its input, as MCP's `tools/list` gives it. */
export type InputSchema = Record<string, unknown> & {
  type?: unknown;
  properties?: Record<string, unknown>;
  required?: unknown;
};

/** True when the tool's input schema has the key argument (an Idem tool, or one behind `idem proxy`). */
export function takesKey(schema: unknown, keyField: string): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  const properties = (schema as InputSchema).properties;
  return typeof properties === 'object' && properties !== null && Object.hasOwn(properties, keyField);
}

/**
 * The schema the model sees: the same one without the key argument (neither in `properties` nor in
 * `required`). The input is not changed.
 */
export function withoutKey(schema: InputSchema, keyField: string): InputSchema {
  const properties = { ...(schema.properties ?? {}) };
  delete properties[keyField];
  const stripped: InputSchema = { ...schema, properties };
  if (Array.isArray(schema.required)) stripped.required = schema.required.filter((name) => name !== keyField);
  return stripped;
}

/** The arguments without the key argument, if the model sent one anyway (it never sees it). */
export function argsWithoutKey(args: unknown, keyField: string): Record<string, unknown> {
  // Not an object: passed on as it is, for the client to refuse (invalid_argument, nothing sent).
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return args as Record<string, unknown>;
  const rest = { ...(args as Record<string, unknown>) };
  delete rest[keyField];
  return rest;
}
