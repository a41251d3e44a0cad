import type { Decision } from '../core/decide.js';
import type { FaultPoints } from '../core/fault-points.js';
import type { JsonObject } from '../core/json.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type { Existing, Receipt } from '../core/receipt.js';

export interface SignalOption {
  signal?: AbortSignal;
}

/** What an effect returns: the business result, which must name the resource it made. */
export type EffectResult = JsonObject & { resource_id: string };

export interface EffectContext {
  readonly operationId: string;
  readonly attemptId: string;
  readonly identity: OperationIdentity;
}

/**
 * One unit of "at most once": the store looks the identity up inside its write transaction,
 * asks `decide`, and only on `execute` runs `effect` with the application's handle and writes
 * `receipt(result)` in the same transaction.
 */
export interface CommitUnit<App> {
  readonly identity: OperationIdentity;
  decide(existing: Existing | undefined): Decision;
  effect(app: App, context: EffectContext): EffectResult | Promise<EffectResult>;
  receipt(result: EffectResult): Receipt;
  readonly context: EffectContext;
}

export type CommitOutcome =
  | { readonly kind: 'executed'; readonly receipt: Receipt }
  | { readonly kind: 'decided'; readonly decision: Exclude<Decision, { kind: 'execute' }> };

export interface SweepOptions extends SignalOption {
  /** Epoch ms taken as "now" for expiry. */
  readonly now: number;
  /** How long a tombstone outlives its receipt, ms. */
  readonly tombstoneTtlMs: number;
  /** Rows per transaction; small so that writers are never blocked for long. */
  readonly batchSize: number;
  /** Stop after this many batches (default: until nothing is left). */
  readonly maxBatches?: number;
}

export interface SweepResult {
  readonly tombstoned: number;
  readonly tombstonesDeleted: number;
  readonly batches: number;
}

export interface ListOptions extends SignalOption {
  readonly status?: string;
  readonly limit?: number;
}

/**
 * The storage port. Adapters (SQLite, PostgreSQL) implement it; the executor relies on exactly
 * these promises:
 *
 * - `commit` MUST run lookup, decision, effect and receipt write in ONE transaction that holds the
 *   write lock for the identity from the lookup on, so that concurrent units with one identity
 *   serialize and exactly one effect commits. If the effect or any fault point throws, it MUST roll
 *   back everything (no effect, no receipt) and rethrow. If the lock is not obtained within the
 *   store's bound it MUST throw `busy` (retryable, with `retryAfterMs`) and never report success.
 *   Two transactions MUST NOT interleave on one connection.
 * - `commit` MUST hit the fault points `after_claim`, `after_effect`, `before_commit` and
 *   `after_commit` at those moments.
 * - `lookup` SHOULD read without taking the write lock; it MUST only see committed data.
 * - `sweep` MUST turn receipts past `expiresAt` into tombstones and delete tombstones past theirs,
 *   each batch in its own short transaction.
 * - Driver errors MUST be translated into IdemError (`busy`, `internal`) inside the adapter.
 */
export interface Store<App> {
  readonly faults: FaultPoints;
  lookup(identity: OperationIdentity, options?: SignalOption): Promise<Existing | undefined>;
  commit(unit: CommitUnit<App>, options?: SignalOption): Promise<CommitOutcome>;
  getOperation(operationId: string, options?: SignalOption): Promise<Receipt | undefined>;
  listOperations(options?: ListOptions): Promise<Receipt[]>;
  sweep(options: SweepOptions): Promise<SweepResult>;
  close(): Promise<void>;
}
