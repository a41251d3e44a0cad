import type { JsonObject, JsonValue } from './json.js';

/**
 * Why `value` does not fit `schema` (a JSON Schema as zod's `toJSONSchema` writes a field's
 * declaration), in words that name the rule and never the value; undefined when it fits. Checked:
 * `type` (one or several; `integer` is a whole number), `const`, `enum`, `anyOf`, `oneOf` (taken as
 * anyOf), `allOf`, string `pattern`/`minLength`/`maxLength`, number bounds
 * (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`), array `items`/`minItems`/
 * `maxItems`, object `properties`/`required`/`additionalProperties: false`. Other keywords
 * (`format`, `multipleOf`, ...) are not checked.
 */
export function jsonSchemaProblem(schema: JsonValue, value: JsonValue): string | undefined {
  if (schema === true || schema === undefined) return undefined;
  if (schema === false) return 'no value is allowed';
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
  const s = schema;
  const types = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type : undefined;
  if (types !== undefined && !types.some((type) => isOfType(type, value)))
    return `expected ${types.join(' or ')}, got ${jsonTypeOf(value)}`;
  if (Object.hasOwn(s, 'const') && JSON.stringify(s.const) !== JSON.stringify(value))
    return `expected the constant ${JSON.stringify(s.const)}`;
  if (Array.isArray(s.enum) && !s.enum.some((item) => JSON.stringify(item) === JSON.stringify(value)))
    return `expected one of ${s.enum.map((item) => JSON.stringify(item)).join(', ')}`;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = s[key];
    if (Array.isArray(options) && options.every((option) => jsonSchemaProblem(option, value) !== undefined))
      return `fits none of its ${options.length} allowed forms`;
  }
  if (Array.isArray(s.allOf)) {
    for (const part of s.allOf) {
      const problem = jsonSchemaProblem(part, value);
      if (problem !== undefined) return problem;
    }
  }
  if (typeof value === 'string') return stringProblem(s, value);
  if (typeof value === 'number') return numberProblem(s, value);
  if (Array.isArray(value)) return arrayProblem(s, value);
  if (typeof value === 'object' && value !== null) return objectProblem(s, value);
  return undefined;
}

/** The JSON type of a value: string, number, boolean, null, array or object. */
export function jsonTypeOf(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function isOfType(type: JsonValue, value: JsonValue): boolean {
  if (type === 'integer') return typeof value === 'number' && Number.isInteger(value);
  return type === jsonTypeOf(value);
}

function stringProblem(s: JsonObject, value: string): string | undefined {
  const length = [...value].length;
  if (typeof s.minLength === 'number' && length < s.minLength)
    return `expected at least ${s.minLength} characters`;
  if (typeof s.maxLength === 'number' && length > s.maxLength)
    return `expected at most ${s.maxLength} characters`;
  if (typeof s.pattern === 'string') {
    let pattern: RegExp;
    try {
      pattern = new RegExp(s.pattern, 'u');
    } catch {
      return undefined;
    }
    if (!pattern.test(value)) return `does not match the pattern ${s.pattern}`;
  }
  return undefined;
}

function numberProblem(s: JsonObject, value: number): string | undefined {
  if (typeof s.minimum === 'number' && value < s.minimum) return `expected at least ${s.minimum}`;
  if (typeof s.maximum === 'number' && value > s.maximum) return `expected at most ${s.maximum}`;
  if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum)
    return `expected more than ${s.exclusiveMinimum}`;
  if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum)
    return `expected less than ${s.exclusiveMaximum}`;
  return undefined;
}

function arrayProblem(s: JsonObject, value: JsonValue[]): string | undefined {
  if (typeof s.minItems === 'number' && value.length < s.minItems)
    return `expected at least ${s.minItems} items`;
  if (typeof s.maxItems === 'number' && value.length > s.maxItems)
    return `expected at most ${s.maxItems} items`;
  if (s.items !== undefined && !Array.isArray(s.items)) {
    for (const [index, item] of value.entries()) {
      const problem = jsonSchemaProblem(s.items, item);
      if (problem !== undefined) return `item ${index}: ${problem}`;
    }
  }
  return undefined;
}

function objectProblem(s: JsonObject, value: JsonObject): string | undefined {
  const properties =
    typeof s.properties === 'object' && s.properties !== null && !Array.isArray(s.properties)
      ? s.properties
      : {};
  if (Array.isArray(s.required)) {
    const missing = s.required.find((name) => typeof name === 'string' && !Object.hasOwn(value, name));
    if (missing !== undefined) return `missing ${JSON.stringify(missing)}`;
  }
  for (const [name, item] of Object.entries(value)) {
    if (Object.hasOwn(properties, name)) {
      const problem = jsonSchemaProblem(properties[name] as JsonValue, item);
      if (problem !== undefined) return `${JSON.stringify(name)}: ${problem}`;
    } else if (s.additionalProperties === false) return `has no field ${JSON.stringify(name)}`;
  }
  return undefined;
}
