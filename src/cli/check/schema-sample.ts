import { UNIQUE, UNIQUE_LENGTH, isObject } from './unique-template.js';

/** Arguments built from a JSON Schema, with `{{unique}}` wherever a string can vary per action. */
export interface SchemaSample {
  readonly value: unknown;
  /** Where the sample may break the schema (a pattern no candidate met, a `$ref` not found, …). */
  readonly unmet: readonly string[];
}

type Schema = Record<string, unknown>;

const MAX_DEPTH = 12;
/** Two fills of `{{unique}}` a candidate string must both pass, so that any fill will. */
const PROBES = ['0123456789ab', 'fedcba987654'];

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
    if (!isObject(input)) return this.string({}, salt);
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
        return this.stringChecked(schema, path, salt);
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

  private number(schema: Schema, path: string, salt: number, whole: boolean): number {
    const { low, high } = bounds(schema, whole);
    let value = low ?? (high !== undefined && high < 1 ? high : 1);
    if (high === undefined || value + salt <= high) value += salt;
    const multiple = finite(schema.multipleOf);
    if (multiple !== undefined && multiple > 0) {
      const up = Math.ceil(value / multiple) * multiple;
      value = high !== undefined && up > high ? Math.floor(value / multiple) * multiple : up;
    }
    if (!numberFits(value, schema, whole)) this.unmet.push(`${path}: no number meets the bounds`);
    return value;
  }

  private stringChecked(schema: Schema, path: string, salt: number): string {
    const value = this.string(schema, salt);
    if (!fits(value, schema)) this.unmet.push(`${path}: no string meets ${describe(schema)}`);
    return value;
  }

  /** The first candidate that fits length, pattern and format; else a fixed fallback. */
  private string(schema: Schema, salt: number): string {
    const min = integer(schema.minLength) ?? 0;
    const fixed = [
      ...(Array.isArray(schema.examples) ? schema.examples : []),
      schema.default,
      'idem'.slice(0, integer(schema.maxLength) ?? 4),
    ].filter((v): v is string => typeof v === 'string');
    for (const candidate of [...candidates(schema, salt), ...fixed]) {
      for (const filler of FILLERS) {
        const padded = pad(candidate, min, filler);
        if (fits(padded, schema)) return padded;
      }
    }
    return pad(fixed[fixed.length - 1] ?? '', min, 'x');
  }
}

/** Characters that lengthen a candidate to `minLength`, tried in order until the pattern holds. */
const FILLERS = ['x', '0', 'a', '_', '-', ' '];

function candidates(schema: Schema, salt: number): string[] {
  const tag = salt === 0 ? '' : `-${salt}`;
  const hex = salt.toString(16).padStart(3, '0').slice(-3);
  const two = (n: number) => String(n).padStart(2, '0');
  switch (schema.format) {
    case 'email':
    case 'idn-email':
      return [`idem-${UNIQUE}${tag}@example.com`];
    case 'uri':
    case 'url':
    case 'iri':
      return [`https://example.com/idem/${UNIQUE}${tag}`];
    case 'uri-reference':
    case 'iri-reference':
      return [`idem/${UNIQUE}${tag}`];
    case 'uuid':
      return [`00000000-0000-4000-8${hex}-${UNIQUE}`];
    case 'date-time':
      return [`2030-01-01T00:00:${two(salt % 60)}Z`];
    case 'date':
      return [`2030-01-${two(1 + (salt % 28))}`];
    case 'time':
      return [`00:00:${two(salt % 60)}Z`];
    case 'hostname':
    case 'idn-hostname':
      return [`idem-${UNIQUE}${tag}.example.com`];
    case 'ipv4':
      return [`192.0.2.${1 + (salt % 254)}`];
    case 'ipv6':
      return [`2001:db8::${(salt + 1).toString(16)}`];
    case 'duration':
      return [`PT${salt + 1}S`];
    case 'json-pointer':
      return [`/idem${tag}`];
    case 'regex':
      return ['idem'];
    default: {
      const space = salt === 0 ? '' : ` ${salt}`;
      return [
        `idem check ${UNIQUE}${space}`,
        `idem-check-${UNIQUE}${tag}`,
        `idem_${UNIQUE}${salt === 0 ? '' : `_${salt}`}`,
        `idem${UNIQUE}${salt === 0 ? '' : salt}`,
        `${UNIQUE}${salt === 0 ? '' : salt}`,
      ];
    }
  }
}

/** Padded with `filler` to `min` characters as filled (a `{{unique}}` fills to 12). */
function pad(candidate: string, min: number, filler: string): string {
  const length = filledLength(candidate);
  return length >= min ? candidate : candidate + filler.repeat(min - length);
}

function filledLength(candidate: string): number {
  const count = candidate.split(UNIQUE).length - 1;
  return [...candidate].length - count * ([...UNIQUE].length - UNIQUE_LENGTH);
}

/** True when every fill of the candidate meets the schema's length and pattern. */
function fits(candidate: string, schema: Schema): boolean {
  const length = filledLength(candidate);
  const min = integer(schema.minLength) ?? 0;
  const max = integer(schema.maxLength) ?? Number.POSITIVE_INFINITY;
  if (length < min || length > max) return false;
  if (typeof schema.pattern !== 'string') return true;
  let pattern: RegExp;
  try {
    pattern = new RegExp(schema.pattern, 'u');
  } catch {
    return true; // a pattern this engine cannot read: leave the judgement to the server
  }
  return PROBES.every((probe) => pattern.test(candidate.split(UNIQUE).join(probe)));
}

function describe(schema: Schema): string {
  const parts = [
    typeof schema.pattern === 'string' ? `pattern ${schema.pattern}` : '',
    schema.minLength !== undefined ? `minLength ${String(schema.minLength)}` : '',
    schema.maxLength !== undefined ? `maxLength ${String(schema.maxLength)}` : '',
  ].filter((p) => p !== '');
  return parts.join(', ') || 'the schema';
}

/** The range to pick from, inclusive; an exclusive bound is stepped inside (half-way when tight). */
function bounds(schema: Schema, whole: boolean): { low: number | undefined; high: number | undefined } {
  // draft-04 spells exclusive bounds as booleans beside minimum/maximum.
  const lowIsExclusive = schema.exclusiveMinimum === true;
  const highIsExclusive = schema.exclusiveMaximum === true;
  const min = lowIsExclusive ? undefined : finite(schema.minimum);
  const max = highIsExclusive ? undefined : finite(schema.maximum);
  const xmin = lowIsExclusive ? finite(schema.minimum) : finite(schema.exclusiveMinimum);
  const xmax = highIsExclusive ? finite(schema.maximum) : finite(schema.exclusiveMaximum);
  if (whole) {
    const lows = [
      min === undefined ? undefined : Math.ceil(min),
      xmin === undefined ? undefined : Math.floor(xmin) + 1,
    ];
    const highs = [
      max === undefined ? undefined : Math.floor(max),
      xmax === undefined ? undefined : Math.ceil(xmax) - 1,
    ];
    return { low: largest(lows), high: smallest(highs) };
  }
  const outerLow = min ?? xmin;
  const outerHigh = max ?? xmax;
  const room = outerLow !== undefined && outerHigh !== undefined ? outerHigh - outerLow : 2;
  const step = Math.min(0.5, room / 2);
  return {
    low: largest([min, xmin === undefined ? undefined : xmin + step]),
    high: smallest([max, xmax === undefined ? undefined : xmax - step]),
  };
}

function largest(values: Array<number | undefined>): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length === 0 ? undefined : Math.max(...defined);
}

function smallest(values: Array<number | undefined>): number | undefined {
  const defined = values.filter((v): v is number => v !== undefined);
  return defined.length === 0 ? undefined : Math.min(...defined);
}

function numberFits(value: number, schema: Schema, whole: boolean): boolean {
  if (!Number.isFinite(value) || (whole && !Number.isInteger(value))) return false;
  const lowIsExclusive = schema.exclusiveMinimum === true;
  const highIsExclusive = schema.exclusiveMaximum === true;
  const min = finite(schema.minimum);
  const max = finite(schema.maximum);
  const xmin = lowIsExclusive ? min : finite(schema.exclusiveMinimum);
  const xmax = highIsExclusive ? max : finite(schema.exclusiveMaximum);
  if (!lowIsExclusive && min !== undefined && value < min) return false;
  if (!highIsExclusive && max !== undefined && value > max) return false;
  if (xmin !== undefined && value <= xmin) return false;
  if (xmax !== undefined && value >= xmax) return false;
  const multiple = finite(schema.multipleOf);
  if (multiple !== undefined && multiple > 0) {
    const ratio = value / multiple;
    if (Math.abs(ratio - Math.round(ratio)) > 1e-9) return false;
  }
  return true;
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

function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function finite(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
