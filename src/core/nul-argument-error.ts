import { IdemError } from './errors.js';

/**
 * An `invalid_argument` error when any string in `args` (a value or a key, at any depth) contains
 * U+0000, naming its path (`body`, `items.0.name`) but never the value; otherwise undefined.
 *
 * Why: SQLite stores such a string while PostgreSQL refuses it (text and jsonb cannot hold NUL), so
 * without this check one call would succeed on one engine and fail as `internal` on the other.
 * Checked before anything is read or written, it makes both answer the same.
 */
export function nulArgumentError(args: unknown, root?: string): IdemError | undefined {
  const path = nulPath(args, root === undefined ? [] : [root]);
  if (path === undefined) return undefined;
  return new IdemError(
    'invalid_argument',
    `invalid arguments: ${path.length === 0 ? 'arguments' : path.join('.')}: must not contain the character U+0000 (NUL)`,
    { nextAction: 'Fix the arguments and call again; a rejected call changed nothing.' },
  );
}

function nulPath(value: unknown, path: string[]): string[] | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = nulPath(value[i], [...path, String(i)]);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      // A key with NUL in it: name the object that holds it, never the key itself.
      if (key.includes('\u0000')) return [...path, '(a key)'];
      const found = nulPath(item, [...path, key]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
