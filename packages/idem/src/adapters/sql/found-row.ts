import type { JsonObject } from '../../core/json.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationError } from '../../core/operation-record.js';
import type { OperationState } from '../../core/operation-state.js';
import type { Existing, ReceiptView } from '../../core/receipt.js';

/**
 * The columns a call's lookup reads (`CallSql.find`), in this order: which table the row is from
 * (`arm`: 0 a record, 1 a tombstone), the version holding the key, the fingerprint, the expiry
 * (the record's or the tombstone's), then a record's `ReceiptView` and a tombstone's
 * `receipt_expired_at`; the other arm's columns are NULL. Nothing else of the record is read: its
 * arguments, leases, audit and timestamps stay in the ledger.
 */
export const FOUND_COLUMNS = [
  'arm',
  'version',
  'fingerprint',
  'expires_at',
  'operation_id',
  'status',
  'resource_id',
  'result_json',
  'error_json',
  'attempt_count',
  'receipt_expired_at',
] as const;

/** A found row as objects keyed by FOUND_COLUMNS (numbers MAY come as strings or bigints). */
export type FoundRow = Readonly<Record<(typeof FOUND_COLUMNS)[number], unknown>>;

/** The select list of the record arm over `idem_operations`, in FOUND_COLUMNS order. */
export const RECORD_ARM =
  '0 AS arm, version, fingerprint, expires_at, operation_id, status, resource_id, result_json, error_json, attempt_count, NULL AS receipt_expired_at';

/** The select list of the tombstone arm over `idem_tombstones`, in FOUND_COLUMNS order. */
export const TOMBSTONE_ARM =
  '1, version, fingerprint, expires_at, NULL, NULL, NULL, NULL, NULL, NULL, receipt_expired_at';

/** The found row's values in FOUND_COLUMNS order (an object row read by its names, never by key order). */
export function foundValues(row: FoundRow): unknown[] {
  return FOUND_COLUMNS.map((column) => row[column]);
}

/**
 * The record or tombstone a found row (values in FOUND_COLUMNS order) holds for `identity`'s key:
 * its principal, workspace, operation and key are the identity's (the statement matched them), its
 * version the row's own.
 */
export function existingOfFound(
  identity: OperationIdentity,
  values: readonly unknown[] | undefined,
): Existing | undefined {
  if (values === undefined) return undefined;
  const held = { ...identity, version: Number(values[1]) };
  if (Number(values[0]) === 1) {
    return {
      kind: 'tombstone',
      tombstone: {
        identity: held,
        fingerprint: values[2] as string,
        receiptExpiredAt: Number(values[10]),
        expiresAt: Number(values[3]),
      },
    };
  }
  const [, , fingerprint, expiresAt, operationId, status, resourceId, result, error, attempts] = values;
  const receipt: ReceiptView = {
    operationId: operationId as string,
    identity: held,
    fingerprint: fingerprint as string,
    status: status as OperationState,
    ...(resourceId === null ? {} : { resourceId: resourceId as string }),
    ...(result === null ? {} : { result: JSON.parse(result as string) as JsonObject }),
    ...(error === null ? {} : { error: JSON.parse(error as string) as OperationError }),
    ...(expiresAt === null ? {} : { expiresAt: Number(expiresAt) }),
    attemptCount: Number(attempts),
  };
  return { kind: 'receipt', receipt };
}
