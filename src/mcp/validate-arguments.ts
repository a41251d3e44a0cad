import type { z } from 'zod';
import { IdemError } from '../core/errors.js';

/**
 * Validates tool arguments with zod and reports every problem by path, never echoing values (they
 * may be private).
 */
export function validateArguments(
  schema: z.ZodType,
  raw: unknown,
): { ok: true; value: unknown } | { ok: false; error: IdemError } {
  const parsed = schema.safeParse(raw ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
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
