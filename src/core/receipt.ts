import type { JsonObject } from './json.js';
import type { OperationIdentity } from './operation-identity.js';

/**
 * What is kept of a completed operation: its identity, the request fingerprint and the original
 * result, committed in the same transaction as the effect.
 */
export interface Receipt {
  readonly operationId: string;
  readonly identity: OperationIdentity;
  readonly fingerprint: string;
  readonly status: 'succeeded';
  readonly resourceId: string;
  /** The result exactly as first returned to the caller (without the `replayed` marker). */
  readonly result: JsonObject;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms after which the receipt no longer replays: a retry then gets `key_expired`. */
  readonly expiresAt: number;
}

/**
 * What is left of a receipt after its retention: enough to refuse a late retry, nothing of the
 * result. Deleted itself at `expiresAt`, after which the key is free again.
 */
export interface Tombstone {
  readonly identity: OperationIdentity;
  readonly fingerprint: string;
  /** Epoch ms when the receipt expired. */
  readonly receiptExpiredAt: number;
  /** Epoch ms when the tombstone itself is deleted. */
  readonly expiresAt: number;
}

export type Existing =
  | { readonly kind: 'receipt'; readonly receipt: Receipt }
  | { readonly kind: 'tombstone'; readonly tombstone: Tombstone };
