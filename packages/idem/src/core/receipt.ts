import type { OperationIdentity } from './operation-identity.js';
import type { OperationRecord } from './operation-record.js';

/** A stored operation: for a local operation, the receipt committed with its effect. */
export type Receipt = OperationRecord;

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

/** What a store holds for an identity: its record (a receipt), or the tombstone left after its retention. */
export type Existing =
  | { readonly kind: 'receipt'; readonly receipt: Receipt }
  | { readonly kind: 'tombstone'; readonly tombstone: Tombstone };
