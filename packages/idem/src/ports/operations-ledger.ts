import type { AttemptRecord, OperationRecord } from '../core/operation-record.js';
import type { AttemptClosure, RecordChange } from '../core/operation-changes.js';
import type { SignalOption } from './maybe-async.js';

/**
 * Which operations `list` returns: those matching every filter given (each exact), in the order of
 * their operation ids (newest first unless `order` is `oldest`), after `after`, at most `limit`.
 * An id that Idem makes begins with the time its call was accepted, so this is arrival order, and
 * an index the stores keep anyway (the unique operation id) serves it without a sort.
 */
export interface ListOptions extends SignalOption {
  /** Only operations in this state. */
  readonly status?: string;
  /** Default 100. */
  readonly limit?: number;
  /** Only operations of this tool (`identity.operation`). */
  readonly operation?: string;
  /** Only operations in this workspace. */
  readonly workspace?: string;
  /** Only operations of this principal. */
  readonly principal?: string;
  /** Only operations created at or after this time, epoch ms. */
  readonly createdFrom?: number;
  /** Only operations created before this time, epoch ms. */
  readonly createdBefore?: number;
  /** Continue after this operation id (the last row of the previous page): keyset paging, never an offset. */
  readonly after?: string;
  /** `newest` first (default) or `oldest` first. */
  readonly order?: 'newest' | 'oldest';
}

/** What `countByState` counts: every state, or with `open` the open states only. */
export interface CountOptions extends SignalOption {
  /** Only accepted, running, cancel_requested and outcome_unknown. */
  readonly open?: boolean;
}

/** Who claims an operation, when, and for how long. */
export interface ClaimOptions extends SignalOption {
  /** The worker the lease is given to. */
  readonly workerId: string;
  /** Epoch ms. */
  readonly now: number;
  /** How long the lease lasts from `now`, ms. */
  readonly leaseMs: number;
}

/** Who extends a lease, when, and until when. */
export interface RenewOptions extends SignalOption {
  /** The worker that must hold the lease. */
  readonly workerId: string;
  /** Epoch ms: a lease already expired at `now` is not renewed. */
  readonly now: number;
  /** The lease's new end, epoch ms. */
  readonly leaseExpiresAt: number;
}

/** What one compare-and-set writes: the record's new fields, and the attempt rows that go with them. */
export interface LedgerWrite {
  readonly change: RecordChange;
  /** An attempt to record in the same transaction, numbered `change.attemptCount`. */
  readonly startAttempt?: {
    readonly attemptId: string;
    readonly workerId: string;
    readonly startedAt: number;
  };
  /** Close every attempt of the operation still open, in the same transaction, before `startAttempt`. */
  readonly closeOpenAttempts?: AttemptClosure & { readonly at: number };
}

/** The record after an update (`undefined`: no such operation), and whether anything was written. */
export interface LedgerUpdate {
  readonly record: OperationRecord | undefined;
  readonly written: boolean;
}

/** How an attempt ended, as `finishAttempt` records it. */
export interface AttemptEnd extends SignalOption {
  /** Epoch ms. */
  readonly endedAt: number;
  /** A short name of how it ended (`succeeded`, `failed`, `lease_lost`, `interrupted`, ...). */
  readonly outcome: string;
  /** One line of detail, safe to show: never a body or an argument value. */
  readonly detail?: string;
}

/**
 * The operations ledger: durable operations a worker carries from `accepted` to a final state, and
 * the queries that report them. Every rule (leases, legal transitions, resolutions) is computed in
 * `core/operation-changes.ts` and handed to `update`; a ledger only reads and writes atomically.
 */
export interface OperationsLedger {
  /** MUST see committed data only; SHOULD not take the write lock. */
  get(operationId: string, options?: SignalOption): Promise<OperationRecord | undefined>;
  /**
   * The operations matching `options`' filters, newest first by creation (or oldest first), ties
   * by operation id, strictly after `options.after` in that order, at most `limit`. MUST see
   * committed data only.
   */
  list(options?: ListOptions): Promise<OperationRecord[]>;
  /**
   * How many operations are in each state, by state name (a state without any MAY be absent);
   * with `open`, only the open states (accepted, running, cancel_requested, outcome_unknown),
   * which stores can count without reading the final ones. MUST see committed data only.
   */
  countByState(options?: CountOptions): Promise<Readonly<Record<string, number>>>;
  /** The operation's attempts by number. */
  attempts(operationId: string, options?: SignalOption): Promise<AttemptRecord[]>;
  /**
   * MUST atomically give at most one worker a lease (until `now + leaseMs`) on one durable
   * operation that is `accepted`, `running` or `cancel_requested`, whose lease is absent or expired
   * at `now` and whose `nextAttemptAt` is absent or past, the one due first (ties: oldest). In the
   * same transaction it MUST close every attempt of that operation still open with
   * `interruptedAttempt(workerId)` (its previous holder stopped before recording the outcome).
   */
  claim(options: ClaimOptions): Promise<OperationRecord | undefined>;
  /** MUST extend the lease only while `workerId` holds it unexpired at `now`; true if it did. */
  renew(operationId: string, options: RenewOptions): Promise<boolean>;
  /**
   * Compare-and-set: MUST read the operation and hold its row until the write commits, call
   * `decide` with it, and write what it returns (nothing for undefined) in the same transaction,
   * together with the attempt rows it names. If `decide` throws, MUST write nothing and rethrow.
   * Resolves with the record as written (or as read, when nothing was written); `record` is
   * undefined for an unknown operation (then `decide` is not called).
   */
  update(
    operationId: string,
    decide: (current: OperationRecord) => LedgerWrite | undefined,
    options?: SignalOption,
  ): Promise<LedgerUpdate>;
  /**
   * MUST record how an attempt ended, also over an outcome a claim or a final record already
   * closed it with (the worker's own account is the more precise one).
   */
  finishAttempt(attemptId: string, end: AttemptEnd): Promise<void>;
}
