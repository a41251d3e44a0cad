import type { OperationRecord } from '../core/operation-record.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import { resolve, type Resolution } from './ledger-commands.js';
import type { DurableHandler } from './durable-handler.js';

/** What `resolveOperation` needs of each handler, by operation name: a DurableHandler will do. */
export type SuccessFieldsByOperation = Readonly<Record<string, Pick<DurableHandler, 'successFields'>>>;

/**
 * An operator's resolution (or, with `correct`, correction) of an operation, through
 * `resolve` (ledger-commands). A success gets the business fields of the operation's handler
 * (`successFields`), so that it has the shape of a success the worker recorded and callers need
 * one parser. Answers the written record, or undefined for an unknown operation; a state that
 * cannot change this way is `invalid_argument`, and nothing is written.
 */
export async function resolveOperation(
  ledger: OperationsLedger,
  handlers: SuccessFieldsByOperation,
  operationId: string,
  resolution: Omit<Resolution, 'fields'>,
): Promise<OperationRecord | undefined> {
  const current = await ledger.get(operationId, resolution);
  if (current === undefined) return undefined;
  // The args never change, so fields read here still hold when the store writes under its lock.
  const fields =
    resolution.to === 'succeeded' && resolution.resourceId !== undefined
      ? handlers[current.identity.operation]?.successFields?.(current, resolution.resourceId)
      : undefined;
  return resolve(ledger, operationId, { ...resolution, ...(fields === undefined ? {} : { fields }) });
}
