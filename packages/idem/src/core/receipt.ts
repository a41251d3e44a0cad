import type { OperationIdentity } from './operation-identity.js';
import type { OperationRecord } from './operation-record.js';

/** A stored operation: for a local operation, the receipt committed with its effect. */
export type Receipt = OperationRecord;

/**
 * What a call reads of a stored operation to decide on it (`decide`) and to answer a replay: its
 * id, identity (with the version that holds the key), request fingerprint, state, expiry, and the
 * stored result, resource, error and attempt count. Every `OperationRecord` is one: a store MAY
 * return the whole record, and the SQL stores read only these columns (arguments, leases, audit
 * and timestamps stay in the ledger, `OperationsLedger.get`).
 */
export type ReceiptView = Pick<OperationRecord, (typeof RECEIPT_VIEW_FIELDS)[number]>;

/** The fields of a `ReceiptView`, in the order `receiptViewOf` copies them. */
export const RECEIPT_VIEW_FIELDS = [
  'operationId',
  'identity',
  'fingerprint',
  'status',
  'resourceId',
  'result',
  'error',
  'expiresAt',
  'attemptCount',
] as const satisfies readonly (keyof OperationRecord)[];

/** The `ReceiptView` of a record (or of a view): its fields that are set, nothing else. */
export function receiptViewOf(record: ReceiptView): ReceiptView {
  const out: Record<string, unknown> = {};
  for (const field of RECEIPT_VIEW_FIELDS) if (record[field] !== undefined) out[field] = record[field];
  return out as unknown as ReceiptView;
}

/**
 * What is left of a record after its retention: enough to refuse a late retry, nothing of the
 * result. Deleted itself at `expiresAt`, after which the key is free again.
 */
export interface Tombstone {
  readonly identity: OperationIdentity;
  readonly fingerprint: string;
  /** Epoch ms when the record expired. */
  readonly receiptExpiredAt: number;
  /** Epoch ms when the tombstone itself is deleted. */
  readonly expiresAt: number;
}

/**
 * What a store holds for an identity: its record (as much of it as a call reads, `ReceiptView`),
 * or the tombstone left after its retention.
 */
export type Existing =
  | { readonly kind: 'receipt'; readonly receipt: ReceiptView }
  | { readonly kind: 'tombstone'; readonly tombstone: Tombstone };
