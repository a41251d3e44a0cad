import { UNIQUE, UNIQUE_LENGTH } from './unique-template.js';
import { integer } from './sample-number.js';

type Schema = Record<string, unknown>;

/** Two fills of `{{unique}}` a candidate string must both pass, so that any fill will. */
const PROBES = ['0123456789ab', 'fedcba987654'];

/**
 * A string for `schema`: the first candidate that fits its length, pattern and format, padded to
 * `minLength`; else a fixed fallback (`examples`, `default`, `idem`), whose `fits` may be false.
 * `salt` makes the items of one array differ.
 */
export function sampleString(schema: Schema, salt: number): { value: string; fits: boolean } {
  const min = integer(schema.minLength) ?? 0;
  const fixed = [
    ...(Array.isArray(schema.examples) ? schema.examples : []),
    schema.default,
    'idem'.slice(0, integer(schema.maxLength) ?? 4),
  ].filter((v): v is string => typeof v === 'string');
  for (const candidate of [...candidates(schema, salt), ...fixed]) {
    for (const filler of FILLERS) {
      const padded = pad(candidate, min, filler);
      if (fits(padded, schema)) return { value: padded, fits: true };
    }
  }
  const value = pad(fixed[fixed.length - 1] ?? '', min, 'x');
  return { value, fits: fits(value, schema) };
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

export function describeString(schema: Schema): string {
  const parts = [
    typeof schema.pattern === 'string' ? `pattern ${schema.pattern}` : '',
    schema.minLength !== undefined ? `minLength ${String(schema.minLength)}` : '',
    schema.maxLength !== undefined ? `maxLength ${String(schema.maxLength)}` : '',
  ].filter((p) => p !== '');
  return parts.join(', ') || 'the schema';
}
