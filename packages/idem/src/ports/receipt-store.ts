import type { JsonObject } from '../core/json.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { Existing } from '../core/receipt.js';
import type { MaybePromise, SignalOption } from './maybe-async.js';

/** A message to send after the transaction commits; the receiver deduplicates on `dedupKey`. */
export interface OutboxIntent {
  readonly destination: string;
  readonly dedupKey: string;
  readonly payload: JsonObject;
}

/** What engines differ in, declared once per store so that the executor never guesses. */
export interface ReceiptCapabilities {
  /**
   * The transaction body runs synchronously: every `ReceiptTransaction` method returns a plain value,
   * and so must the application's effect (better-sqlite3 holds the connection for one tick).
   */
  readonly synchronous: boolean;
  /**
   * `put(record, 'absent')` is cheaper than `find()` + `put()`: the store can insert only where no
   * record or tombstone exists and report a race with `ReceiptRace` (PostgreSQL). Stores whose
   * lookup under the lock costs nothing extra (SQLite) declare false and are always asked `find()`.
   */
  readonly optimisticInsert: boolean;
}

/**
 * The write side of one receipt transaction, handed to the executor by `ReceiptStore.transaction`.
 * Every method runs inside that transaction (synchronously when `capabilities.synchronous`).
 */
export interface ReceiptTransaction<Tx> {
  /** The application's own transaction handle: its writes commit or roll back with the receipt. */
  readonly handle: Tx;
  /**
   * Whether another transaction held the identity's lock when this one asked for it. Only stores
   * with `optimisticInsert` report it; the executor then looks (`find`) instead of guessing.
   */
  readonly contended: boolean;
  /**
   * MUST return the committed or this transaction's record or tombstone of the identity's key
   * (principal, workspace, operation, key) in ANY version of the operation, if any: where several
   * versions hold it, the identity's own version wins, else the oldest (a record before a tombstone
   * of the same version). A tombstone's `identity` carries its own version. Of a record, MUST
   * return at least its `ReceiptView` fields as stored (its identity with the version that holds the
   * key); MAY return the whole record (the SQL stores read only those columns).
   */
  find(): MaybePromise<Existing | undefined>;
  /**
   * MUST write `record` in this transaction. `previous` is what `find` returned: a tombstone (of
   * whichever version it is) MUST then be removed in the same transaction. `'absent'` (only with
   * `optimisticInsert`): the caller did not look; the store MUST insert only where neither record nor
   * tombstone of the key exists in any version of the operation and otherwise throw `ReceiptRace`,
   * leaving the caller to roll back and start again.
   */
  put(record: OperationRecord, previous: Existing | undefined | 'absent'): MaybePromise<void>;
  /** MUST record `intent` in this transaction, once per `dedupKey` (a second enqueue is ignored). */
  enqueue(intent: OutboxIntent): MaybePromise<void>;
}

/** Options of one receipt transaction. */
export interface ReceiptTransactionOptions extends SignalOption {
  /** The caller's lock-free lookup just before found nothing (a hint for `optimisticInsert`). */
  readonly absent?: boolean;
}

/**
 * Receipts: the lookup, and the one write transaction in which the executor finds, decides, runs
 * the effect and writes the record (the algorithm itself lives in the executor, once).
 */
export interface ReceiptStore<Tx> {
  readonly capabilities: ReceiptCapabilities;
  /**
   * SHOULD read without taking the write lock; MUST see committed data only, read from the storage
   * on every call (never an answer kept from an earlier one: an operator's resolution or correction
   * committed before the call is what it returns). MUST return the record or the tombstone of
   * `identity`'s key in ANY version of the operation, if any, chosen as `find` chooses (the
   * identity's own version, else the oldest), a record with at least its `ReceiptView` fields as `find`
   * returns it: a key never runs again under another version (see `decide`).
   */
  lookup(identity: OperationIdentity, options?: SignalOption): Promise<Existing | undefined>;
  /**
   * MUST run `body` in ONE transaction that holds the write lock for `identity`'s key from before
   * `body` starts until commit, in every version of the operation at once, so that concurrent
   * transactions with one key serialize, whatever their versions (a lock or advisory-lock key MUST
   * NOT include the version). MUST commit
   * when `body` returns and roll everything back (the application's writes, the record, outbox
   * messages) when it throws, then rethrow its error unchanged (driver errors translated into
   * IdemError: `busy` when the lock is not obtained within the store's bound, retryable with
   * `retryAfterMs`; `unavailable` when the storage cannot take the call). MUST resolve only once
   * the commit is durable. A connection lost during COMMIT MUST reject with `outcome_unknown`.
   * Two transactions MUST NOT interleave on one connection. MAY run `body` again after a
   * serialization failure (the body is written to be re-run).
   */
  transaction<T>(
    identity: OperationIdentity,
    body: (tx: ReceiptTransaction<Tx>) => MaybePromise<T>,
    options?: ReceiptTransactionOptions,
  ): Promise<T>;
}

/** Thrown by `put(record, 'absent')` when a record or tombstone of the key (any version) exists after all. */
export class ReceiptRace extends Error {
  override readonly name = 'ReceiptRace';
  constructor() {
    super('a record or tombstone for this identity appeared since the lookup');
  }
}
