import type { ListedTool } from '../check-connection.js';
import { numberFits, sampleNumber } from './sample-number.js';
import { schemaSample } from './schema-sample.js';
import { fill, hasUnique, isObject, UNIQUE, UNIQUE_LENGTH } from './unique-template.js';

/**
 * How the "same key, other arguments" row makes its second call: one top-level argument, outside
 * the scope, changed to another valid value; every other argument (the scope included) exactly as
 * in the first call. Or why no argument can change.
 */
export type OtherArguments =
  | {
      readonly field: string;
      /**
       * `unique`: the field's template filled with another `{{unique}}`; `number`, `choice`: `value`
       * replaces it; `optional`: `value` is added (the first call leaves the field out).
       */
      readonly how: 'unique' | 'number' | 'choice' | 'optional';
      readonly template: unknown;
    }
  | { readonly field: undefined; readonly why: string };

/** Arguments where a varying text is most at home, chosen first. */
export const FREE_TEXT = /body|text|content|title|name|description|message|note|comment/i;

interface Sources {
  readonly tool: ListedTool;
  readonly template: Record<string, unknown>;
  /** The arguments the user fixed (`--arg`, the config). */
  readonly fixed: readonly string[];
  readonly key: string | undefined;
  readonly scope: readonly string[];
  /** Arguments the tool says a retry may change without effect. */
  readonly uncovered: readonly string[];
}

/**
 * Chooses the argument the conflict row changes, in this order: a string that holds `{{unique}}`
 * (free text first), a number the checker sampled, a number the user fixed, a free string the user
 * fixed (` {{unique}}` appended), another `enum` value or the other boolean, then an optional
 * argument (no default, not a boolean) added. Never a scope field, the key, or a field the tool says
 * a retry may reword.
 */
export function otherArguments(sources: Sources): OtherArguments {
  const { tool, template, fixed, key, scope, uncovered } = sources;
  const properties = isObject(tool.inputSchema.properties) ? tool.inputSchema.properties : {};
  const schemaOf = (name: string) => {
    const p = properties[name];
    return isObject(p) ? p : {};
  };
  const open = (name: string) => name !== key && !scope.includes(name) && !uncovered.includes(name);
  const present = Object.keys(template).filter(open);
  const byText = (a: string, b: string) => Number(!FREE_TEXT.test(a)) - Number(!FREE_TEXT.test(b));

  const unique = present.filter((name) => hasUnique(template[name])).sort(byText)[0];
  if (unique !== undefined) return { field: unique, how: 'unique', template: template[unique] };

  const numbers = present.filter((name) => typeof template[name] === 'number');
  const sampledFirst = [
    ...numbers.filter((n) => !fixed.includes(n)),
    ...numbers.filter((n) => fixed.includes(n)),
  ];
  for (const name of sampledFirst) {
    const value = anotherNumber(schemaOf(name), template[name] as number);
    if (value !== undefined) return { field: name, how: 'number', template: value };
  }

  for (const name of present.filter((n) => typeof template[n] === 'string').sort(byText)) {
    const text = `${template[name] as string} ${UNIQUE}`;
    if (freeString(schemaOf(name), [...(template[name] as string)].length + 1 + UNIQUE_LENGTH)) {
      return { field: name, how: 'unique', template: text };
    }
  }

  for (const name of present) {
    const schema = schemaOf(name);
    const current = JSON.stringify(template[name]);
    const choices = Array.isArray(schema.enum)
      ? schema.enum
      : schema.type === 'boolean' && typeof template[name] === 'boolean'
        ? [true, false]
        : [];
    const other = choices.find((choice) => JSON.stringify(choice) !== current);
    if (other !== undefined) return { field: name, how: 'choice', template: other };
  }

  for (const [name, p] of Object.entries(properties)) {
    if (name in template || !open(name) || !isObject(p) || 'default' in p || p.type === 'boolean') continue;
    const sample = schemaSample(p);
    if (sample.unmet.length > 0 || sample.value === null || typeof sample.value === 'boolean') continue;
    return { field: name, how: 'optional', template: sample.value };
  }

  const left = [
    scope.length > 0 ? `the scope (${scope.join(', ')}) is never varied` : '',
    uncovered.length > 0 ? `the tool lets a retry reword ${uncovered.join(', ')}` : '',
  ].filter((part) => part !== '');
  return {
    field: undefined,
    why:
      'no argument can take another valid value' +
      (left.length > 0 ? ` (${left.join('; ')})` : '') +
      ': pass --arg NAME=VALUE for a number, or with {{unique}} in a free string argument',
  };
}

/** The other value of the field, filled for one action (`{{unique}}` replaced by `unique`). */
export function otherValue(other: Extract<OtherArguments, { field: string }>, unique: string): unknown {
  return other.how === 'unique' || other.how === 'optional' ? fill(other.template, unique) : other.template;
}

/** Another number the schema takes: one more, one less, twice, or the sampler's. */
function anotherNumber(schema: Record<string, unknown>, current: number): number | undefined {
  const whole = schema.type === 'integer' || Number.isInteger(current);
  const candidates = [current + 1, current - 1, current * 2, current + 2];
  for (let salt = 0; salt < 4; salt += 1) candidates.push(sampleNumber(schema, salt, whole).value);
  return candidates.find((n) => n !== current && numberFits(n, schema, whole));
}

/** A string argument without pattern, format, enum or const, that takes `length` characters. */
function freeString(schema: Record<string, unknown>, length: number): boolean {
  const type = schema.type;
  if (type !== undefined && type !== 'string' && !(Array.isArray(type) && type.includes('string')))
    return false;
  if (['pattern', 'format', 'enum', 'const'].some((word) => word in schema)) return false;
  const max = schema.maxLength;
  return typeof max !== 'number' || max >= length;
}
