import type { JsonObject, JsonValue } from 'idem';
import { propertiesOf, type KnownDeclaration } from 'idem/operations';

/** What the console's "Result fields" boxes show of an operation's tool: an example, and the rules. */
export interface ResultFieldsHint {
  /** A JSON object of the tool's own fields, each with a value of its type; '' when none applies. */
  readonly example: string;
  /** One sentence naming the fields and their types (or why none can be given). */
  readonly text: string;
}

/**
 * The hint for a tool's result fields, built from what its server stored (`KnownDeclaration`):
 * its declared fields, each with its type; any business field when it declares none; none when
 * nothing is stored (the check then refuses result fields).
 */
export function resultFieldsHint(tool: string, declaration: KnownDeclaration): ResultFieldsHint {
  if (declaration === undefined || declaration === null)
    return {
      example: '',
      text: `The result fields of ${tool} are not known to this database (its server has not registered it here yet): settle it without result fields.`,
    };
  if (declaration.resultSchema === null)
    return {
      example: '',
      text: `${tool} declares no result fields: any business field may be given (not status, operation_id, resource_id, ...).`,
    };
  const properties = propertiesOf(declaration.resultSchema);
  const names = Object.keys(properties);
  if (names.length === 0)
    return { example: '', text: `${tool} results have no business fields: settle it without result fields.` };
  const example: JsonObject = {};
  for (const name of names) example[name] = exampleOf(properties[name]);
  return {
    example: JSON.stringify(example),
    text: `Fields of ${tool}: ${names.map((name) => `${name} (${describe(properties[name])})`).join(', ')}. Any other field is refused.`,
  };
}

function schemaObject(schema: JsonValue | undefined): JsonObject {
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? schema : {};
}

function typesOf(schema: JsonObject): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  const options = [schema.anyOf, schema.oneOf].find(Array.isArray);
  return options === undefined ? [] : options.flatMap((option) => typesOf(schemaObject(option)));
}

function describe(field: JsonValue | undefined): string {
  const schema = schemaObject(field);
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  const types = typesOf(schema);
  const words = types.length === 0 ? 'any' : types.join(' or ');
  return typeof schema.pattern === 'string' ? `${words} matching ${schema.pattern}` : words;
}

function exampleOf(field: JsonValue | undefined): JsonValue {
  const schema = schemaObject(field);
  if (Object.hasOwn(schema, 'const')) return schema.const as JsonValue;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0] as JsonValue;
  const type = typesOf(schema).find((t) => t !== 'null') ?? typesOf(schema)[0];
  switch (type) {
    case 'integer':
    case 'number':
      // 0, or the nearest bound when 0 is out of range.
      if (typeof schema.minimum === 'number' && schema.minimum > 0) return schema.minimum;
      if (typeof schema.maximum === 'number' && schema.maximum < 0) return schema.maximum;
      return 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return {};
    case 'null':
      return null;
    default:
      return '';
  }
}
