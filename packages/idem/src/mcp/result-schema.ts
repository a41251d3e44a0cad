import { z } from 'zod';
import { IdemError } from '../core/errors.js';
import { IDEM_EVIDENCE_FIELDS, IDEM_RESULT_FIELDS } from '../core/result-field-names.js';
import type { EffectResult } from '../executor/effect.js';
import { idemResultShape } from './tool-result.js';

/**
 * The fields a stored `failed` or `outcome_unknown` operation's answer carries beside Idem's own
 * (see `outcomeResult`): the attempts made and the evidence the worker kept.
 */
const evidenceShape = {
  attempts: z.number().int().nonnegative().optional(),
  result: z.record(z.string(), z.unknown()).optional(),
};

/** Names an effect's declared result fields may not use: Idem sets them on every answer. */
export const RESERVED_RESULT_FIELDS: readonly string[] = [...IDEM_RESULT_FIELDS, ...IDEM_EVIDENCE_FIELDS];

/**
 * Checks a tool's `resultSchema` once, at registration: a zod object whose fields are business
 * fields only (`resource_id` and Idem's other names are Idem's). Throws `invalid_argument`.
 */
export function validateResultSchema(tool: string, declared: unknown): asserts declared is z.ZodObject {
  if (!(declared instanceof z.ZodObject)) {
    throw new IdemError(
      'invalid_argument',
      `the resultSchema of ${tool} must be a zod object of its business result fields (z.object({ ... }))`,
    );
  }
  for (const name of Object.keys(declared.shape)) {
    if (RESERVED_RESULT_FIELDS.includes(name)) {
      throw new IdemError(
        'invalid_argument',
        `the resultSchema of ${tool} declares ${JSON.stringify(name)}, which Idem sets itself (${RESERVED_RESULT_FIELDS.join(', ')}); declare business fields only`,
      );
    }
  }
}

/**
 * The exact output schema of a tool with declared result fields: Idem's own fields, the evidence of
 * a stored failure, and the declared fields, and no other key. The declared fields are optional
 * here, because an error answer (which clients also validate against the output schema) has none;
 * the effect's result is held to `declared` as written (see `resultCheck`).
 */
export function exactOutputSchema(declared: z.ZodObject): z.ZodObject {
  const business: Record<string, z.ZodType> = {};
  for (const [name, field] of Object.entries(declared.shape))
    business[name] = (field as z.ZodType).optional();
  return z.strictObject({ ...idemResultShape, ...evidenceShape, ...business });
}

/**
 * A check of an effect's result against its declared fields, as written and strictly (no other
 * field): run inside the transaction before the receipt is written, it throws `internal` naming
 * the fields at fault (never their values), so a mismatch commits nothing.
 */
export function resultCheck(tool: string, declared: z.ZodObject): (result: EffectResult) => void {
  const strict = declared.strict();
  return (result) => {
    const { resource_id: _resourceId, ...business } = result;
    const parsed = strict.safeParse(business);
    if (parsed.success) return;
    const faults = parsed.error.issues.map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => `${key}: not declared`).join('; ');
      }
      const field = issue.path.map(String).join('.') || '(result)';
      if (issue.path.length === 1 && !Object.hasOwn(business, String(issue.path[0]))) {
        return `${field}: missing`;
      }
      return issue.code === 'invalid_type'
        ? `${field}: expected ${issue.expected}`
        : `${field}: ${issue.code}`;
    });
    throw new IdemError(
      'internal',
      `the effect of ${tool} returned a result that does not match its resultSchema (${faults.join('; ')}); nothing was committed`,
    );
  };
}
