import type { z } from 'zod';
import type { JsonObject } from '../core/json.js';
import type { LogFields } from '../core/logger.js';
import type { Applied } from './durable-handler.js';

/**
 * A success as the worker records it when its handler declares `resultSchema`: the effect has
 * happened at the external system, so the success (and its resource id) is recorded whatever the
 * fields are; a field that is not declared, or does not fit its declaration, is left out of the
 * stored result (so that every answer fits the tool's exact output schema) and named, never its
 * value, in one `op.result_mismatch` error line (`log`): the handler's author has a bug to fix.
 * Without a declared schema, `applied` as it is.
 */
export function fittedApplied(
  applied: Applied,
  declared: z.ZodObject | undefined,
  log: (fields: LogFields) => void,
): Applied {
  if (declared === undefined) return applied;
  const shape = declared.shape as Record<string, z.ZodType>;
  const fields: JsonObject = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(applied.fields)) {
    const field = Object.hasOwn(shape, name) ? shape[name] : undefined;
    if (field === undefined) dropped.push(`${name}: not declared`);
    else if (!field.safeParse(value).success) dropped.push(`${name}: does not fit its declaration`);
    else fields[name] = value;
  }
  const missing = Object.keys(shape).filter(
    (name) =>
      !Object.hasOwn(fields, name) &&
      !Object.hasOwn(applied.fields, name) &&
      !shape[name]?.safeParse(undefined).success,
  );
  const problems = [...dropped, ...missing.map((name) => `${name}: missing`)];
  if (problems.length > 0) {
    log({
      problems: problems.join('; '),
      message:
        'the handler returned result fields that do not fit its resultSchema; the success is recorded without them',
    });
  }
  return dropped.length === 0 ? applied : { ...applied, fields };
}
