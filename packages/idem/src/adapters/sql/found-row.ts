import type { JsonObject } from '../../core/json.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationError } from '../../core/operation-record.js';
import type { OperationState } from '../../core/operation-state.js';
import type { Existing, ReceiptView } from '../../core/receipt.js';

/**
 * A record's columns that a call decides on and a replay answers with, in this order: what the
 * probe of the identity's own version reads (SQLite's first statement, which knows the table and
 * version it reads), and the middle of FOUND_COLUMNS.
 */
const RECEIPT_COLUMNS = [
  'fingerprint',
  'expires_at',
  'operation_id',
  'status',
  'resource_id',
  'result_json',
  'error_json',
  'attempt_count',
] as const;

/**
 * The columns a call's lookup reads (`CallSql.find`), in this order: which table the row is from
 * (`arm`: 0 a record, 1 a tombstone), the version holding the key, the fingerprint, the expiry
 * (the record's or the tombstone's), then a record's `ReceiptView` and a tombstone's
 * `receipt_expired_at`; the other arm's columns are NULL. Nothing else of the record is read: its
 * arguments, leases, audit and timestamps stay in the ledger.
 */
export const FOUND_COLUMNS = ['arm', 'version', ...RECEIPT_COLUMNS, 'receipt_expired_at'] as const;

/** Where RECEIPT_COLUMNS begin in a found row. */
const RECEIPT_AT = FOUND_COLUMNS.indexOf('fingerprint');

/** A found row as objects keyed by FOUND_COLUMNS (numbers MAY come as strings or bigints). */
export type FoundRow = Readonly<Record<(typeof FOUND_COLUMNS)[number], unknown>>;

/** The select list of the record arm over `idem_operations`, in FOUND_COLUMNS order. */
export const RECORD_ARM = `0 AS arm, version, ${RECEIPT_COLUMNS.join(', ')}, NULL AS receipt_expired_at`;

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
  return { kind: 'receipt', receipt: receiptOf(held, values, RECEIPT_AT) };
}

/** The select list of the own-version probe over `idem_operations`, in RECEIPT_COLUMNS order. */
export const OWN_SELECT = RECEIPT_COLUMNS.join(', ');

/** A row of RECEIPT_COLUMNS as objects keyed by name, as values in RECEIPT_COLUMNS order. */
export function ownValues(row: Readonly<Record<(typeof RECEIPT_COLUMNS)[number], unknown>>): unknown[] {
  return RECEIPT_COLUMNS.map((column) => row[column]);
}

/** The record of `identity`'s own version, from its values in RECEIPT_COLUMNS order. */
export function existingOfOwn(identity: OperationIdentity, values: readonly unknown[]): Existing {
  return { kind: 'receipt', receipt: receiptOf({ ...identity }, values, 0) };
}

/**
 * The `ReceiptView` in `values` from index `at` on (RECEIPT_COLUMNS), its fields in
 * RECEIPT_VIEW_FIELDS order, the absent ones left out; built field by field, without intermediate
 * objects.
 */
function receiptOf(identity: OperationIdentity, values: readonly unknown[], at: number): ReceiptView {
  const expiresAt = values[at + 1];
  const resourceId = values[at + 4];
  const result = values[at + 5];
  const error = values[at + 6];
  // attemptCount is set last, after the optional fields, in the order receiptViewOf copies them.
  const receipt = {
    operationId: values[at + 2] as string,
    identity,
    fingerprint: values[at] as string,
    status: values[at + 3] as OperationState,
  } as { -readonly [K in keyof ReceiptView]: ReceiptView[K] };
  if (resourceId !== null) receipt.resourceId = resourceId as string;
  if (result !== null) receipt.result = JSON.parse(result as string) as JsonObject;
  if (error !== null) receipt.error = JSON.parse(error as string) as OperationError;
  if (expiresAt !== null) receipt.expiresAt = Number(expiresAt);
  receipt.attemptCount = Number(values[at + 7]);
  return receipt;
}
