import { IdemError } from '../core/errors.js';
import { IDEM_RESULT_FIELDS } from '../core/result-field-names.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { resolve, type Resolution } from './ledger-transitions.js';
import type { DurableHandler } from './durable-handler.js';

/** What `resolveOperation` needs of each handler, by operation name: a DurableHandler will do. */
export type SuccessFieldsByOperation = Readonly<Record<string, Pick<DurableHandler, 'successFields'>>>;

/**
 * An operator's resolution (or, with `correct`, correction) of an operation, through
 * `resolve` (ledger-transitions). A success carries the business fields of one the worker records,
 * so that callers need one parser: the operation handler's `successFields` for the resource id,
 * then `fields`, the values the operator gives. Those are checked first: a name the result itself
 * uses (`status`, `operation_id`, `resource_id`, `error`, ...) is refused, and so is, when the
 * handler has `successFields`, a name it does not produce or a value of another JSON type than
 * the one it produces. `fields` with `failed` is refused too. Answers the written record, or
 * undefined for an unknown operation; a refused resolution is `invalid_argument`, and nothing is
 * written.
 */
export async function resolveOperation(
  ledger: OperationsLedger,
  handlers: SuccessFieldsByOperation,
  operationId: string,
  resolution: Resolution,
): Promise<OperationRecord | undefined> {
  const current = await ledger.get(operationId, resolution);
  if (current === undefined) return undefined;
  const problem = givenFieldsProblem(current, handlers, resolution);
  if (problem !== undefined) throw new IdemError('invalid_argument', problem);
  if (resolution.to !== 'succeeded') return resolve(ledger, operationId, resolution);
  // The args never change, so fields read here still hold when the store writes under its lock.
  const declared = declaredFields(current, handlers, resolution.resourceId);
  const fields =
    declared === undefined && resolution.fields === undefined
      ? undefined
      : { ...declared, ...resolution.fields };
  return resolve(ledger, operationId, { ...resolution, ...(fields === undefined ? {} : { fields }) });
}

/** The names a durable tool's result gives itself (idemResultSchema); business fields stand beside. */
const IDEM_RESULT_NAMES: ReadonlySet<string> = new Set(IDEM_RESULT_FIELDS);

/**
 * Why the result fields an operator gives (`fields`) do not fit a success of `operation`, or
 * undefined when they do (or none are given): the rules of `resolveOperation`, for a caller that
 * wants to refuse before it writes (the CLI's usage error).
 */
export function givenFieldsProblem(
  operation: OperationRecord,
  handlers: SuccessFieldsByOperation,
  resolution: Pick<Resolution, 'to' | 'resourceId' | 'fields'>,
): string | undefined {
  const given = resolution.fields;
  if (given === undefined) return undefined;
  if (resolution.to !== 'succeeded') return 'result fields are given only with a success';
  const declared = declaredFields(operation, handlers, resolution.resourceId);
  const tool = operation.identity.operation;
  for (const [name, value] of Object.entries(given)) {
    if (IDEM_RESULT_NAMES.has(name))
      return `result field ${JSON.stringify(name)} is set by Idem itself (${[...IDEM_RESULT_NAMES].join(', ')}); give business fields only`;
    if (declared === undefined) continue;
    if (!Object.hasOwn(declared, name))
      return `${tool} results have no field ${JSON.stringify(name)}; its fields are ${Object.keys(declared).join(', ')}`;
    const want = jsonType(declared[name]);
    if (jsonType(value) !== want)
      return `result field ${JSON.stringify(name)} of ${tool} is a ${want}, got a ${jsonType(value)}`;
  }
  return undefined;
}

/** The handler's success fields for `resourceId`, when it has a `successFields` hook. */
function declaredFields(
  operation: OperationRecord,
  handlers: SuccessFieldsByOperation,
  resourceId: string | undefined,
): JsonObject | undefined {
  if (resourceId === undefined) return undefined;
  return handlers[operation.identity.operation]?.successFields?.(operation, resourceId);
}

function jsonType(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
