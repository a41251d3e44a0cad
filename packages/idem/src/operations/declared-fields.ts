import type { z } from 'zod';
import type { JsonObject } from '../core/json.js';
import type { LogFields } from '../core/logger.js';
import { IDEM_EVIDENCE_FIELDS, IDEM_RESULT_FIELDS } from '../core/result-field-names.js';
import type { Applied } from './durable-handler.js';

/** The names Idem's own answer fields take (idemResultShape and a stored failure's evidence). */
const IDEM_NAMES: ReadonlySet<string> = new Set([...IDEM_RESULT_FIELDS, ...IDEM_EVIDENCE_FIELDS]);

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
  const { fields, dropped } = fit(applied.fields, shape, new Set());
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

/**
 * The evidence of a `cancelled` outcome as the worker stores it when its handler declares
 * `resultSchema`: a cancelled operation's answer is that evidence, so Idem's own names stay and a
 * business field stays only if it is declared and fits; the others are left out and named in one
 * `op.result_mismatch` error line. Declared fields may be missing (a cancelled effect may not have
 * made them). Without a declared schema (or evidence), `evidence` as it is.
 */
export function fittedEvidence(
  evidence: JsonObject | undefined,
  declared: z.ZodObject | undefined,
  log: (fields: LogFields) => void,
): JsonObject | undefined {
  if (declared === undefined || evidence === undefined) return evidence;
  const { fields, dropped } = fit(evidence, declared.shape as Record<string, z.ZodType>, IDEM_NAMES);
  if (dropped.length === 0) return evidence;
  log({
    problems: dropped.join('; '),
    message:
      'the handler returned cancellation evidence that does not fit its resultSchema; it is recorded without those fields',
  });
  return fields;
}

function fit(
  given: JsonObject,
  shape: Record<string, z.ZodType>,
  kept: ReadonlySet<string>,
): { fields: JsonObject; dropped: string[] } {
  const fields: JsonObject = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(given)) {
    const field = Object.hasOwn(shape, name) ? shape[name] : undefined;
    if (kept.has(name)) fields[name] = value;
    else if (field === undefined) dropped.push(`${name}: not declared`);
    else if (!field.safeParse(value).success) dropped.push(`${name}: does not fit its declaration`);
    else fields[name] = value;
  }
  return { fields, dropped };
}
