import type { Decision } from '../core/decide.js';
import { IdemError } from '../core/errors.js';
import { FaultPoints } from '../core/fault-points.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { Existing } from '../core/receipt.js';
import { run, step, type Steps } from '../core/steps.js';
import type { SignalOption } from '../ports/maybe-async.js';
import { ReceiptRace, type ReceiptStore, type ReceiptTransaction } from '../ports/receipt-store.js';
import type { EffectContext, EffectResult } from './effect.js';

/**
 * One unit of "at most once": inside the store's write transaction, find what the identity has,
 * `decide`, and only on `execute` run `effect` (if any) with the application's handle, then write
 * `receipt(result)` in the same transaction. A durable operation has no effect here: its record is
 * born `accepted` and a worker executes it later.
 */
export interface CommitUnit<App> {
  readonly identity: OperationIdentity;
  readonly context: Omit<EffectContext, 'enqueue'>;
  /** The caller's lock-free lookup, just before, found neither a record nor a tombstone. */
  readonly absent?: boolean;
  decide(existing: Existing | undefined): Decision;
  effect?(app: App, context: EffectContext): EffectResult | Promise<EffectResult>;
  receipt(result: EffectResult | undefined): OperationRecord;
}

export type CommitOutcome =
  | { readonly kind: 'executed'; readonly receipt: OperationRecord }
  | { readonly kind: 'decided'; readonly decision: Exclude<Decision, { kind: 'execute' }> };

/**
 * find -> decide -> effect -> record, written once for every store: synchronously where the store
 * is (SQLite: the effect must then be synchronous too), awaited elsewhere. Where the store offers
 * an optimistic insert and the caller found nothing, the lookup under the lock is skipped unless
 * the lock was contended; a record that appeared meanwhile (ReceiptRace) rolls the effect back and
 * the unit runs again, looking first. Hits the fault points `after_claim`, `after_effect`,
 * `before_commit` (inside the transaction) and `after_commit` (a throw there is `outcome_unknown`:
 * the data is committed).
 */
export async function commitOnce<App>(
  receipts: ReceiptStore<App>,
  unit: CommitUnit<App>,
  faults: FaultPoints = new FaultPoints(),
  options: SignalOption = {},
): Promise<CommitOutcome> {
  const sync = receipts.capabilities.synchronous;
  const optimistic = unit.absent === true && receipts.capabilities.optimisticInsert;
  const attempt = (guess: boolean) =>
    receipts.transaction(
      unit.identity,
      (tx) => run(steps(tx, unit, faults, guess && !tx.contended), sync, 'an effect on a synchronous store'),
      { ...options, ...(guess ? { absent: true } : {}) },
    );
  let outcome: CommitOutcome;
  try {
    outcome = await attempt(optimistic);
  } catch (error) {
    if (!(error instanceof ReceiptRace)) throw error;
    // Someone recorded this identity since the caller looked: rolled back, decide again.
    outcome = await attempt(false);
  }
  try {
    faults.hit('after_commit');
  } catch (cause) {
    throw new IdemError('outcome_unknown', 'the transaction committed but the call did not complete', {
      cause,
      retryable: true,
      nextAction: 'Retry with the same idempotency_key and arguments to get the recorded result.',
    });
  }
  return outcome;
}

function* steps<App>(
  tx: ReceiptTransaction<App>,
  unit: CommitUnit<App>,
  faults: FaultPoints,
  guess: boolean,
): Steps<CommitOutcome> {
  const existing = guess ? undefined : yield* step(tx.find());
  const decision = unit.decide(existing);
  if (decision.kind !== 'execute') {
    faults.hit('before_commit');
    return { kind: 'decided', decision };
  }
  faults.hit('after_claim');
  const enqueued: unknown[] = [];
  const context: EffectContext = {
    ...unit.context,
    enqueue: (intent) => {
      const written = tx.enqueue(intent);
      // Awaited below; until then a rejection must not count as unhandled.
      if (written instanceof Promise) written.catch(() => undefined);
      enqueued.push(written);
      return written;
    },
  };
  const result = unit.effect === undefined ? undefined : yield* step(unit.effect(tx.handle, context));
  // An effect that did not await its enqueues still has them written before the receipt.
  for (const written of enqueued) yield written;
  faults.hit('after_effect');
  const record = unit.receipt(result);
  yield tx.put(record, guess ? 'absent' : existing);
  faults.hit('before_commit');
  return { kind: 'executed', receipt: record };
}
