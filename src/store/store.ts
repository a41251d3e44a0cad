import type { Decision } from '../core/decide.js';
import type { FaultPoints } from '../core/fault-points.js';
import type { JsonObject } from '../core/json.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type {
  AttemptRecord,
  OperationError,
  OperationRecord,
  OutboxMessage,
} from '../core/operation-record.js';
import type { OperationState } from '../core/operation-state.js';
import type { OperatorResolution } from '../core/operation-changes.js';
import type { Existing } from '../core/receipt.js';

export interface SignalOption {
  signal?: AbortSignal;
}

/** What an effect returns: the business result, which must name the resource it made. */
export type EffectResult = JsonObject & { resource_id: string };

/** A message to send after the transaction commits; the receiver deduplicates on `dedupKey`. */
export interface OutboxIntent {
  readonly destination: string;
  readonly dedupKey: string;
  readonly payload: JsonObject;
}

export interface EffectContext {
  readonly operationId: string;
  readonly attemptId: string;
  readonly identity: OperationIdentity;
  /**
   * Records an outbox message in the effect's own transaction: it commits (or rolls back) with the
   * effect. Synchronous on SQLite.
   */
  enqueue(intent: OutboxIntent): void | Promise<void>;
}

/**
 * One unit of "at most once": the store looks the identity up inside its write transaction, asks
 * `decide`, and only on `execute` runs `effect` (if any) with the application's handle, then writes
 * `record(result)` in the same transaction. A durable operation has no effect here: its record is
 * born `accepted` and a worker executes it later.
 */
export interface CommitUnit<App> {
  readonly identity: OperationIdentity;
  readonly context: Omit<EffectContext, 'enqueue'>;
  /**
   * The caller's lock-free lookup, just before, found neither a record nor a tombstone for this
   * identity. A store MAY then skip its own lookup and run the effect at once, but it MUST still
   * refuse to write the record when a record or a tombstone for the identity exists by then: it
   * MUST roll the effect back and decide again with what it finds, as if the hint had been absent.
   */
  readonly absent?: boolean;
  decide(existing: Existing | undefined): Decision;
  effect?(app: App, context: EffectContext): EffectResult | Promise<EffectResult>;
  receipt(result: EffectResult | undefined): OperationRecord;
}

export type CommitOutcome =
  | { readonly kind: 'executed'; readonly receipt: OperationRecord }
  | { readonly kind: 'decided'; readonly decision: Exclude<Decision, { kind: 'execute' }> };

export interface SweepOptions extends SignalOption {
  /** Epoch ms taken as "now" for expiry. */
  readonly now: number;
  /** How long a tombstone outlives its record, ms. */
  readonly tombstoneTtlMs: number;
  /** Most rows per transaction. */
  readonly batchSize: number;
  /**
   * How long one batch transaction should take, ms (default 0.25 ms, `DEFAULT_SWEEP_BATCH_BUDGET_MS`).
   * A store whose batch holds a lock that callers wait for (SQLite's single writer) MUST size each
   * batch (at most `batchSize` rows) from how long the previous ones took, so that a writer arriving
   * during a sweep waits about this long at most. A store whose batches block no caller
   * (PostgreSQL: row locks with SKIP LOCKED) MAY ignore it.
   */
  readonly batchBudgetMs?: number;
  /**
   * Most share of the sweep's wall time spent in batches, in (0, 1] (default 0.5,
   * `DEFAULT_SWEEP_MAX_DUTY`). A store whose batches block callers MUST wait between batches so that
   * a batch (from queueing to commit) and the wait after it keep this ratio: the sweep then leaves
   * the write lock and the disk to callers most of the time. Other stores MAY ignore it.
   */
  readonly maxDuty?: number;
  /** Stop after this many batches (default: until nothing is left). */
  readonly maxBatches?: number;
  /**
   * Delete outbox messages delivered at least this long ago, ms (the receipts' retention, so that a
   * message outlives the record that produced it). Unset: delivered messages are kept. Dead letters
   * and undelivered messages are never swept.
   */
  readonly outboxRetentionMs?: number;
}

export interface SweepResult {
  readonly tombstoned: number;
  readonly tombstonesDeleted: number;
  /** Delivered outbox messages deleted (0 unless `outboxRetentionMs` was given). */
  readonly outboxDeleted: number;
  readonly batches: number;
}

export interface ListOptions extends SignalOption {
  readonly status?: string;
  readonly limit?: number;
}

export interface ClaimOptions extends SignalOption {
  readonly workerId: string;
  /** Epoch ms. */
  readonly now: number;
  readonly leaseMs: number;
}

/** Fields a worker may change together with a state change. */
export interface OperationPatch {
  readonly resourceId?: string;
  readonly result?: JsonObject;
  readonly error?: OperationError;
  readonly expiresAt?: number;
  readonly dispatched?: boolean;
  /** Epoch ms before which no worker claims the operation again (backoff); releases the lease unless `releaseLease: false`. */
  readonly nextAttemptAt?: number;
  /** Give up the lease after this change (the operation waits for backoff or is final). */
  readonly releaseLease?: boolean;
}

export interface TransitionRequest extends SignalOption {
  /** The lease holder; the change is refused (undefined) if another worker holds the lease. */
  readonly workerId: string;
  /** The change applies only if the operation is in one of these states. */
  readonly from: readonly OperationState[];
  readonly to: OperationState;
  readonly now: number;
  readonly patch?: OperationPatch;
}

export interface AttemptStart extends SignalOption {
  readonly workerId: string;
  readonly attemptId: string;
  readonly now: number;
  /** The operation must be in one of these states; it moves to `running`. */
  readonly from: readonly OperationState[];
}

export interface AttemptEnd extends SignalOption {
  readonly endedAt: number;
  readonly outcome: string;
  readonly detail?: string;
}

/** An operator's resolution of an outcome_unknown operation, or correction of a failed or cancelled one. */
export interface Resolution extends OperatorResolution, SignalOption {}

export interface DeadLetterListOptions extends SignalOption {
  /** Default 100. */
  readonly limit?: number;
}

/**
 * The storage port. Adapters (SQLite, PostgreSQL) implement it; the executor and the worker rely on
 * exactly these promises.
 *
 * Idempotent calls:
 * - `commit` MUST run lookup, decision, effect and record write in ONE transaction that holds the
 *   write lock for the identity from the lookup on, so that concurrent units with one identity
 *   serialize and exactly one effect commits. If the effect or any fault point throws, it MUST roll
 *   back everything (no effect, no record, no outbox message) and rethrow. If the lock is not
 *   obtained within the store's bound it MUST throw `busy` (retryable, with `retryAfterMs`) and never
 *   report success. Two transactions MUST NOT interleave on one connection.
 * - `commit` MUST hit the fault points `after_claim`, `after_effect`, `before_commit` and
 *   `after_commit` at those moments.
 * - `lookup`, `getOperation`, `listOperations`, `listAttempts` SHOULD read without taking the write
 *   lock; they MUST only see committed data.
 * - `sweep` MUST turn final records past `expiresAt` into tombstones and delete tombstones past
 *   theirs, each batch in its own short transaction. Records that are not final never expire. A
 *   batch MAY commit without waiting for the disk (losing it in a power failure only leaves work for
 *   the next sweep), but MUST NOT commit a caller's write in the same transaction.
 *
 * Durable operations (a worker carries them from `accepted` to a final state):
 * - `claimDue` MUST atomically give at most one worker a lease on an operation that is `accepted`,
 *   `running` or `cancel_requested`, whose lease is absent or expired and whose backoff has passed.
 *   In the same transaction it MUST close every attempt of that operation still open (the previous
 *   holder stopped before recording its outcome): `endedAt` now, outcome `interrupted`.
 * - `transition`, `startAttempt`, `renewLease` MUST apply only while `workerId` holds an unexpired
 *   lease and the state is one of `from`; otherwise they change nothing and return undefined/false.
 *   Every state change MUST be legal per `core/operation-state.ts`. A `transition` to a state that
 *   is not active (final, or `outcome_unknown`) MUST close, in the same transaction, every attempt
 *   of the operation still open, with the new state as its outcome; so no attempt stays open when a
 *   worker dies between the final record and `finishAttempt`, which may still add its own outcome
 *   and detail afterwards.
 * - `startAttempt` MUST, in one transaction, move the operation to `running` (a `cancel_requested`
 *   one stays so), count the attempt, set `dispatched` and record the attempt row, BEFORE the caller
 *   contacts the provider.
 * - `requestCancel` MUST move `accepted`/`running` to `cancel_requested` and leave any other state
 *   unchanged; `resolve` MUST only settle `outcome_unknown` or, with `correct`, change `failed` or
 *   `cancelled` to `succeeded` (`core/operation-changes.ts` resolutionChange), reading and writing
 *   the record in one transaction that holds its row, and appending who, when, the state before
 *   and why to its audit.
 *
 * Outbox:
 * - Messages enqueued in an effect MUST commit or roll back with it. `claimOutbox` MUST lease each
 *   message to one dispatcher at a time; a message whose sender crashed is sent again after the lease
 *   expires, with the same `dedupKey`. It MUST NOT claim a delivered message or a dead letter.
 * - `completeOutbox`, `retryOutbox` and `deadLetterOutbox` MUST apply only while `workerId` is the
 *   message's lease owner (otherwise they change nothing); `deadLetterOutbox` only to a message
 *   neither delivered nor dead. `requeueOutbox` MUST apply only to a dead letter: it becomes due at
 *   `now` with its attempts counted from 0 again.
 *
 * Driver errors MUST be translated into IdemError inside the adapter: `busy` for lock waits,
 * `unavailable` when the storage cannot take the call (full disk, read-only, I/O error, refused or
 * lost connection, no such database; retryable exactly when transient, naming the file or
 * `host:port` in a StorageCause), `internal` otherwise.
 */
export interface Store<App> {
  readonly faults: FaultPoints;
  lookup(identity: OperationIdentity, options?: SignalOption): Promise<Existing | undefined>;
  commit(unit: CommitUnit<App>, options?: SignalOption): Promise<CommitOutcome>;
  getOperation(operationId: string, options?: SignalOption): Promise<OperationRecord | undefined>;
  listOperations(options?: ListOptions): Promise<OperationRecord[]>;
  sweep(options: SweepOptions): Promise<SweepResult>;

  claimDue(options: ClaimOptions): Promise<OperationRecord | undefined>;
  renewLease(
    operationId: string,
    workerId: string,
    leaseExpiresAt: number,
    options?: SignalOption,
  ): Promise<boolean>;
  transition(operationId: string, request: TransitionRequest): Promise<OperationRecord | undefined>;
  startAttempt(operationId: string, start: AttemptStart): Promise<OperationRecord | undefined>;
  finishAttempt(attemptId: string, end: AttemptEnd): Promise<void>;
  listAttempts(operationId: string, options?: SignalOption): Promise<AttemptRecord[]>;
  requestCancel(
    operationId: string,
    now: number,
    options?: SignalOption,
  ): Promise<OperationRecord | undefined>;
  resolve(operationId: string, resolution: Resolution): Promise<OperationRecord | undefined>;

  claimOutbox(options: ClaimOptions & { limit: number }): Promise<OutboxMessage[]>;
  completeOutbox(id: number, workerId: string, now: number, options?: SignalOption): Promise<void>;
  retryOutbox(
    id: number,
    workerId: string,
    nextAttemptAt: number,
    error: string,
    options?: SignalOption,
  ): Promise<void>;
  /** Gives up on a message its holder could not deliver: a dead letter, never claimed until re-queued. */
  deadLetterOutbox(
    id: number,
    workerId: string,
    now: number,
    error: string,
    options?: SignalOption,
  ): Promise<void>;
  /** Dead letters, oldest first. */
  listDeadLetters(options?: DeadLetterListOptions): Promise<OutboxMessage[]>;
  /** Makes a dead letter due again; the re-queued message, or undefined if `id` is not a dead letter. */
  requeueOutbox(id: number, now: number, options?: SignalOption): Promise<OutboxMessage | undefined>;

  close(): Promise<void>;
}
