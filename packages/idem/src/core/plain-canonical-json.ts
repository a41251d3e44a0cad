import { unstorableText } from './unstorable-text.js';

/** Deeper than this, the careful checks decide (they name a cycle; this pass does not look for one). */
const MAX_DEPTH = 64;

/**
 * The RFC 8785 canonical JSON text of `value`, in one pass, when `value` is plain JSON (objects
 * whose prototype is `Object.prototype` or null, arrays without holes or `undefined` items, finite
 * numbers, strings, booleans, null; `undefined` properties left out) and every string and key in
 * it can be stored on every engine (no U+0000, no lone surrogate). For anything else it answers
 * `undefined` and decides nothing: the caller then runs the checks that name what is wrong
 * (`unstorableArgumentError`, `canonicalArguments`), which is how an odd value is refused exactly
 * as before. Where it answers a text, that text equals `canonicalArguments(value)`.
 *
 * Why: a replay used to walk its arguments three times (storable strings, plain JSON, the
 * canonical text), a third of the executor's own time on a replay.
 */
export function plainCanonicalJson(value: Record<string, unknown>): string | undefined {
  return write(value, 0);
}

function write(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return unstorableText(value) === undefined ? JSON.stringify(value) : undefined;
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if (depth >= MAX_DEPTH) return undefined;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
      return Array.isArray(value) ? writeArray(value, depth + 1) : writeObject(value, depth + 1);
    default:
      return undefined;
  }
}

function writeArray(items: readonly unknown[], depth: number): string | undefined {
  let text = '[';
  for (let i = 0; i < items.length; i += 1) {
    const item = items[i];
    if (item === undefined) return undefined;
    const inner = write(item, depth);
    if (inner === undefined) return undefined;
    text += i === 0 ? inner : `,${inner}`;
  }
  return `${text}]`;
}

function writeObject(object: object, depth: number): string | undefined {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const record = object as Record<string, unknown>;
  // Sorted by UTF-16 code units, as RFC 8785 and the canonicalizer sort them.
  const keys = Object.keys(record).sort();
  let text = '{';
  let first = true;
  for (const key of keys) {
    // Every key is checked, also one whose value is undefined (the careful check names it too).
    if (unstorableText(key) !== undefined) return undefined;
    const item = record[key];
    if (item === undefined) continue;
    const inner = write(item, depth);
    if (inner === undefined) return undefined;
    text += `${first ? '' : ','}${JSON.stringify(key)}:${inner}`;
    first = false;
  }
  return `${text}}`;
}
