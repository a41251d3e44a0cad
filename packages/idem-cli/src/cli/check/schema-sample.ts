import { integer, sampleNumber } from './sample-number.js';
import { describeString, sampleString } from './sample-string.js';
import { isObject } from './unique-template.js';

/** Arguments built from a JSON Schema, with `{{unique}}` wherever a string can vary per action. */
export interface SchemaSample {
  readonly value: unknown;
  /** Where the sample may break the schema (a pattern no candidate met, a `$ref` not found, …). */
  readonly unmet: readonly string[];
}

type Schema = Record<string, unknown>;

const MAX_DEPTH = 12;

/**
 * A valid value for a tool's `inputSchema` (JSON Schema draft-07 or 2020-12, the subset tools use):
 * `type` (or a list of types), `const`, `enum`, `$ref` to the same document, `allOf`/`anyOf`/
 * `oneOf`, objects with their `required` properties only (an optional flag such as `dryRun` is left
 * to the server's default), arrays of `minItems` (at least one) items, `uniqueItems`, strings within
 * `minLength`/`maxLength` that meet `pattern` and the common `format`s, numbers within
 * `minimum`/`maximum`/exclusive bounds and `multipleOf`. Strings carry `{{unique}}` where they can
 * (`idem check {{unique}}`), so each intended action gets arguments of its own.
 */
export function schemaSample(schema: unknown): SchemaSample {
  const sampler = new Sampler(schema);
  const value = sampler.sample(schema, '$', 0, 0);
  return { value, unmet: sampler.unmet };
}

class Sampler {
  readonly unmet: string[] = [];

  constructor(private readonly root: unknown) {}

  sample(input: unknown, path: string, salt: number, depth: number): unknown {
    if (input === false) {
      this.unmet.push(`${path}: the schema accepts nothing`);
      return null;
    }
    if (!isObject(input)) return sampleString({}, salt).value;
    if (depth > MAX_DEPTH) {
      this.unmet.push(`${path}: nested too deep`);
      return null;
    }
    const schema = this.flatten(input, path, depth);
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[salt % schema.enum.length];
    switch (typeOf(schema)) {
      case 'object':
        return this.object(schema, path, salt, depth);
      case 'array':
        return this.array(schema, path, salt, depth);
      case 'integer':
        return this.number(schema, path, salt, true);
      case 'number':
        return this.number(schema, path, salt, false);
      case 'boolean':
        return salt % 2 === 1;
      case 'null':
        return null;
      default:
        return this.string(schema, path, salt);
    }
  }

  /** `$ref`, `allOf` and the first usable `anyOf`/`oneOf` branch merged into one schema. */
  private flatten(schema: Schema, path: string, depth: number): Schema {
    let current = schema;
    for (let steps = 0; steps < MAX_DEPTH; steps += 1) {
      const { $ref, allOf, anyOf, oneOf, ...rest } = current;
      if (typeof $ref === 'string') {
        const target = this.resolve($ref);
        if (target === undefined) {
          this.unmet.push(`${path}: $ref ${$ref} not found`);
          current = { ...rest, ...(allOf === undefined ? {} : { allOf }) };
        } else current = merge(target, { ...rest, ...(allOf === undefined ? {} : { allOf }) });
        continue;
      }
      if (Array.isArray(allOf)) {
        current = allOf.filter(isObject).reduce<Schema>((acc, part) => merge(acc, part), rest);
        if (anyOf !== undefined) current.anyOf = anyOf;
        if (oneOf !== undefined) current.oneOf = oneOf;
        continue;
      }
      const branches = Array.isArray(anyOf) ? anyOf : Array.isArray(oneOf) ? oneOf : undefined;
      if (branches !== undefined) {
        const usable = branches.filter(isObject);
        const branch = usable.find((b) => b.type !== 'null') ?? usable[0];
        current = branch === undefined ? rest : merge(rest, branch);
        continue;
      }
      return current;
    }
    this.unmet.push(`${path}: schema nested too deep (depth ${depth})`);
    return current;
  }

  private resolve(ref: string): Schema | undefined {
    if (!ref.startsWith('#')) return undefined;
    let node: unknown = this.root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const step = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      node = isObject(node) ? node[step] : Array.isArray(node) ? node[Number(step)] : undefined;
    }
    return isObject(node) ? node : undefined;
  }

  private object(schema: Schema, path: string, salt: number, depth: number): Record<string, unknown> {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required)
      ? schema.required.filter((n): n is string => typeof n === 'string')
      : [];
    const extra = isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
    const names = [...new Set(required)];
    const wanted = integer(schema.minProperties) ?? 0;
    for (const name of Object.keys(properties)) {
      if (names.length >= wanted) break;
      if (!names.includes(name)) names.push(name);
    }
    for (let i = 0; names.length < wanted; i += 1) if (!names.includes(`idem_${i}`)) names.push(`idem_${i}`);
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const child = name in properties ? properties[name] : (extra ?? {});
      out[name] = this.sample(child, `${path}.${name}`, salt, depth + 1);
    }
    return out;
  }

  private array(schema: Schema, path: string, salt: number, depth: number): unknown[] {
    const min = integer(schema.minItems) ?? 0;
    const max = integer(schema.maxItems) ?? Number.POSITIVE_INFINITY;
    const count = Math.min(Math.max(1, min), max);
    const tuple = Array.isArray(schema.prefixItems)
      ? schema.prefixItems
      : Array.isArray(schema.items)
        ? schema.items
        : [];
    const rest = Array.isArray(schema.items)
      ? schema.additionalItems
      : schema.items === undefined
        ? {}
        : schema.items;
    const items: unknown[] = [];
    for (let i = 0; i < count; i += 1) {
      const itemSchema = i === 0 && isObject(schema.contains) ? schema.contains : (tuple[i] ?? rest);
      items.push(this.sample(itemSchema, `${path}[${i}]`, salt + i, depth + 1));
    }
    if (schema.uniqueItems === true && new Set(items.map((v) => JSON.stringify(v))).size < items.length) {
      this.unmet.push(`${path}: items are not unique`);
    }
    return items;
  }

  private string(schema: Schema, path: string, salt: number): string {
    const { value, fits } = sampleString(schema, salt);
    if (!fits) this.unmet.push(`${path}: no string meets ${describeString(schema)}`);
    return value;
  }

  private number(schema: Schema, path: string, salt: number, whole: boolean): number {
    const { value, fits } = sampleNumber(schema, salt, whole);
    if (!fits) this.unmet.push(`${path}: no number meets the bounds`);
    return value;
  }
}

function typeOf(schema: Schema): string {
  const { type } = schema;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const types = type.filter((t): t is string => typeof t === 'string');
    if (types.includes('object') && isObject(schema.properties)) return 'object';
    return types.find((t) => t === 'string') ?? types.find((t) => t !== 'null') ?? types[0] ?? 'string';
  }
  if (isObject(schema.properties) || Array.isArray(schema.required)) return 'object';
  if ('items' in schema || 'prefixItems' in schema || 'minItems' in schema) return 'array';
  if ('minimum' in schema || 'maximum' in schema || 'multipleOf' in schema) return 'number';
  return 'string';
}

/** `a` and `b` as one schema: `b` wins, except that properties and required lists are joined. */
function merge(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a, ...b };
  if (isObject(a.properties) && isObject(b.properties)) out.properties = { ...a.properties, ...b.properties };
  if (Array.isArray(a.required) && Array.isArray(b.required)) {
    out.required = [...new Set([...a.required, ...b.required])];
  }
  return out;
}
