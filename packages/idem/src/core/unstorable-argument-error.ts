import { IdemError } from './errors.js';
import { unstorableText } from './unstorable-text.js';

/**
 * An `invalid_argument` error when any string in `args` (a value or a key, at any depth) cannot be
 * stored the same on every engine (U+0000, or a lone surrogate: see unstorableText), naming its path
 * (`body`, `items.0.name`) but never the value; otherwise undefined.
 *
 * Why: SQLite stores a NUL while PostgreSQL refuses it, and PostgreSQL turns every lone surrogate
 * into U+FFFD, so without this check one call would succeed on one engine and fail as `internal` on
 * the other, or two different workspaces would become one. Checked before anything is read or
 * written, it makes every engine answer the same.
 */
export function unstorableArgumentError(args: unknown, root?: string): IdemError | undefined {
  const found = unstorablePath(args, root === undefined ? [] : [root]);
  if (found === undefined) return undefined;
  const where = found.path.length === 0 ? 'arguments' : found.path.join('.');
  return new IdemError('invalid_argument', `invalid arguments: ${where}: ${found.problem}`, {
    nextAction: 'Fix the arguments and call again; a rejected call changed nothing.',
  });
}

interface Found {
  readonly path: string[];
  readonly problem: string;
}

function unstorablePath(value: unknown, path: string[]): Found | undefined {
  if (typeof value === 'string') {
    const problem = unstorableText(value);
    return problem === undefined ? undefined : { path, problem };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = unstorablePath(value[i], [...path, String(i)]);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      // A key that cannot be stored: name the object that holds it, never the key itself.
      const problem = unstorableText(key);
      if (problem !== undefined) return { path: [...path, '(a key)'], problem };
      const found = unstorablePath(item, [...path, key]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
