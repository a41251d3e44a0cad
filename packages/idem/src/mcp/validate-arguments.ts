import type { z } from 'zod';
import { IdemError } from '../core/errors.js';
import { unstorableArgumentError } from '../core/unstorable-argument-error.js';

/**
 * Validates tool arguments with zod and reports every problem by path, never echoing values (they
 * may be private). A string containing U+0000 or a lone surrogate is refused here too, for read
 * tools as well as mutating ones, so that SQLite and PostgreSQL answer alike.
 */
export function validateArguments(
  schema: z.ZodType,
  raw: unknown,
): { ok: true; value: unknown } | { ok: false; error: IdemError } {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) {
    const unstorable = unstorableArgumentError(parsed.data);
    return unstorable === undefined ? { ok: true, value: parsed.data } : { ok: false, error: unstorable };
  }
  const problems = parsed.error.issues.map((issue) => {
    const path = issue.path.length === 0 ? 'arguments' : issue.path.map(String).join('.');
    return `${path}: ${issue.message}`;
  });
  return {
    ok: false,
    error: new IdemError('invalid_argument', `invalid arguments: ${problems.join('; ')}`, {
      nextAction: 'Fix the arguments and call again; a rejected call changed nothing.',
    }),
  };
}
