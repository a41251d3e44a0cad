import { systemClock, type Clock } from '../core/clock.js';
import { IdemError } from '../core/errors.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import { interruptedAttempt } from '../core/operation-changes.js';
import type { AttemptRecord, OperationRecord } from '../core/operation-record.js';
import { isActive } from '../core/operation-state.js';
import type { Existing } from '../core/receipt.js';
import type { IdemStore, StoreCapabilities } from '../ports/idem-store.js';
import type { SignalOption } from '../ports/maybe-async.js';
import type {
  AttemptEnd,
  ClaimOptions,
  LedgerUpdate,
  LedgerWrite,
  ListOptions,
  OperationsLedger,
  RenewOptions,
} from '../ports/operations-ledger.js';
import {
  ReceiptRace,
  type OutboxIntent,
  type ReceiptStore,
  type ReceiptTransaction,
  type ReceiptTransactionOptions,
} from '../ports/receipt-store.js';
import { memoryOperatorSessions, memoryToolCatalog } from './memory-catalog.js';
import { memoryHousekeeping, memoryOutbox } from './memory-outbox.js';
import { clean, identityKey, keyOf, MemoryState, type Guard } from './memory-state.js';
import type { MemoryReader, MemoryTx } from './memory-tables.js';

export type { MemoryReader, MemoryTx } from './memory-tables.js';

/** How `memoryStore` is built. */
export interface MemoryStoreOptions {
  /** Stamps outbox messages (`createdAt`) at enqueue. Default: the system clock. */
  readonly clock?: Clock;
}

/** An in-memory store, and a read-only view of the application rows its effects committed. */
export interface MemoryStore extends IdemStore<MemoryTx> {
  /** Committed application rows (what effects wrote through `MemoryTx`). */
  readonly data: MemoryReader;
}

/**
 * NOT DURABLE: everything lives in this process and is gone when it ends. For unit tests of tools
 * only: an effect gets a `MemoryTx` whose writes commit with the receipt or roll back with it.
 * Receipt transactions serialize per identity (one promise chain each). `synchronous` is false so
 * that both synchronous effects (written for SQLite) and asynchronous ones (PostgreSQL, ORMs) run
 * on it. It passes the contract suite (`storeContract`) like every store.
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const clock = options.clock ?? systemClock;
  const state = new MemoryState();
  let closed = false;
  const guard = (signal: AbortSignal | undefined) => {
    signal?.throwIfAborted();
    if (closed) throw new IdemError('unavailable', 'the memory store is closed', { retryable: false });
  };
  const capabilities: StoreCapabilities = {
    engine: 'memory',
    synchronous: false,
    optimisticInsert: false,
    multiProcess: false,
    durable: false,
  };
  return {
    capabilities,
    receipts: memoryReceipts(state, clock, guard, capabilities),
    ledger: memoryLedger(state, guard),
    outbox: memoryOutbox(state, guard),
    housekeeping: memoryHousekeeping(state, guard),
    tools: memoryToolCatalog(guard),
    sessions: memoryOperatorSessions(guard),
    data: state.tables,
    close: async () => {
      closed = true;
    },
  };
}

function memoryReceipts(
  state: MemoryState,
  clock: Clock,
  guard: Guard,
  capabilities: StoreCapabilities,
): ReceiptStore<MemoryTx> {
  const locks = new Map<string, Promise<void>>();
  // The key's record or tombstone in any version: the identity's own first, else the oldest.
  const lookup = (identity: OperationIdentity): Existing | undefined => {
    for (const version of state.versionsOf(identity)) {
      const candidate = { ...identity, version };
      const stored = state.operationOf(candidate);
      if (stored !== undefined) return { kind: 'receipt', receipt: clean(stored.record) };
      const tombstone = state.tombstones.get(identityKey(candidate));
      if (tombstone !== undefined) return { kind: 'tombstone', tombstone: clean(tombstone) };
    }
    return undefined;
  };
  return {
    capabilities: { synchronous: capabilities.synchronous, optimisticInsert: capabilities.optimisticInsert },
    lookup: async (identity, options = {}) => {
      guard(options.signal);
      return lookup(identity);
    },
    async transaction<T>(
      identity: OperationIdentity,
      body: (tx: ReceiptTransaction<MemoryTx>) => T | Promise<T>,
      options: ReceiptTransactionOptions = {},
    ): Promise<T> {
      guard(options.signal);
      const key = identityKey(identity);
      // One lock per idempotency key, shared by every version of the operation.
      const lockKey = keyOf(identity);
      const before = locks.get(lockKey) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const tail = before.then(() => mine);
      locks.set(lockKey, tail);
      await before;
      const tables = state.tables.begin();
      try {
        guard(options.signal);
        // The record to commit, and the tombstone it replaces (its identity key), if any.
        let record: { record: OperationRecord; dropTombstone: string | undefined } | undefined;
        const intents = new Map<string, OutboxIntent & { createdAt: number }>();
        const tx: ReceiptTransaction<MemoryTx> = {
          handle: tables.tx,
          contended: false,
          find: () =>
            record === undefined ? lookup(identity) : { kind: 'receipt', receipt: clean(record.record) },
          put: (next, previous) => {
            if (identityKey(next.identity) !== key)
              throw new IdemError(
                'internal',
                'put: the record belongs to another identity than the transaction',
              );
            if (previous === 'absent' && tx.find() !== undefined) throw new ReceiptRace();
            record = {
              record: clean(next),
              dropTombstone:
                previous !== 'absent' && previous?.kind === 'tombstone'
                  ? identityKey(previous.tombstone.identity)
                  : record?.dropTombstone,
            };
          },
          enqueue: (intent) => {
            if (!intents.has(intent.dedupKey))
              intents.set(intent.dedupKey, { ...clean(intent), createdAt: clock.now() });
          },
        };
        const result = await body(tx);
        // Commit: every write of the transaction at once, within this tick.
        tables.commit();
        if (record !== undefined) {
          state.putRecord(record.record);
          if (record.dropTombstone !== undefined) state.tombstones.delete(record.dropTombstone);
        }
        for (const intent of intents.values()) {
          if (state.outboxByDedupKey.has(intent.dedupKey)) continue;
          const id = state.nextOutboxId();
          state.outboxByDedupKey.set(intent.dedupKey, id);
          state.outbox.set(id, {
            message: {
              id,
              dedupKey: intent.dedupKey,
              destination: intent.destination,
              payload: intent.payload,
              createdAt: intent.createdAt,
              attempts: 0,
            },
            nextAttemptAt: intent.createdAt,
          });
        }
        return result;
      } finally {
        tables.end();
        release();
        if (locks.get(lockKey) === tail) locks.delete(lockKey);
      }
    },
  };
}

function memoryLedger(state: MemoryState, guard: Guard): OperationsLedger {
  const attemptsOf = (operationId: string): AttemptRecord[] =>
    [...state.attempts.values()]
      .filter((a) => a.operationId === operationId)
      .sort((a, b) => a.number - b.number);
  const closeOpen = (operationId: string, at: number, outcome: string, detail: string) => {
    for (const attempt of attemptsOf(operationId))
      if (attempt.endedAt === undefined)
        state.attempts.set(attempt.attemptId, { ...attempt, endedAt: at, outcome, detail });
  };
  return {
    async get(operationId, options = {}) {
      guard(options.signal);
      const stored = state.operations.get(operationId);
      return stored === undefined ? undefined : clean(stored.record);
    },
    async list(options: ListOptions = {}) {
      guard(options.signal);
      const sign = options.order === 'oldest' ? -1 : 1;
      const newerFirst = (a: { operationId: string }, b: typeof a) =>
        b.operationId < a.operationId ? -1 : b.operationId > a.operationId ? 1 : 0;
      const after = options.after;
      return [...state.operations.values()]
        .map((s) => s.record)
        .filter(
          (r) =>
            (options.status === undefined || r.status === options.status) &&
            (options.operation === undefined || r.identity.operation === options.operation) &&
            (options.workspace === undefined || r.identity.workspace === options.workspace) &&
            (options.principal === undefined || r.identity.principal === options.principal) &&
            (options.createdFrom === undefined || r.createdAt >= options.createdFrom) &&
            (options.createdBefore === undefined || r.createdAt < options.createdBefore) &&
            (after === undefined || sign * newerFirst({ operationId: after }, r) < 0),
        )
        .sort((a, b) => sign * newerFirst(a, b))
        .slice(0, options.limit ?? 100)
        .map((r) => clean(r));
    },
    async countByState(options = {}) {
      guard(options.signal);
      const counts: Record<string, number> = {};
      for (const s of state.operations.values()) {
        if (options.open === true && !isActive(s.record.status) && s.record.status !== 'outcome_unknown')
          continue;
        counts[s.record.status] = (counts[s.record.status] ?? 0) + 1;
      }
      return counts;
    },
    async attempts(operationId, options = {}) {
      guard(options.signal);
      return attemptsOf(operationId).map((a) => clean(a));
    },
    async claim(options: ClaimOptions) {
      guard(options.signal);
      const due = [...state.operations.values()]
        .filter(
          (s) =>
            s.record.kind === 'durable' &&
            isActive(s.record.status) &&
            (s.record.leaseExpiresAt === undefined || s.record.leaseExpiresAt <= options.now) &&
            (s.nextAttemptAt === undefined || s.nextAttemptAt <= options.now),
        )
        .sort(
          (a, b) =>
            (a.nextAttemptAt ?? a.record.createdAt) - (b.nextAttemptAt ?? b.record.createdAt) ||
            a.record.createdAt - b.record.createdAt ||
            a.seq - b.seq,
        )[0];
      if (due === undefined) return undefined;
      due.record = {
        ...due.record,
        leaseOwner: options.workerId,
        leaseExpiresAt: options.now + options.leaseMs,
      };
      const closure = interruptedAttempt(options.workerId);
      closeOpen(due.record.operationId, options.now, closure.outcome, closure.detail);
      return clean(due.record);
    },
    async renew(operationId, options: RenewOptions) {
      guard(options.signal);
      const stored = state.operations.get(operationId);
      const record = stored?.record;
      if (
        stored === undefined ||
        record === undefined ||
        record.leaseOwner !== options.workerId ||
        record.leaseExpiresAt === undefined ||
        record.leaseExpiresAt <= options.now
      )
        return false;
      stored.record = { ...record, leaseExpiresAt: options.leaseExpiresAt };
      return true;
    },
    async update(
      operationId,
      decide: (current: OperationRecord) => LedgerWrite | undefined,
      options: SignalOption = {},
    ) {
      guard(options.signal);
      const stored = state.operations.get(operationId);
      if (stored === undefined) return { record: undefined, written: false } satisfies LedgerUpdate;
      // decide runs within this tick: nothing else reads or writes the row until the write is done.
      const write = decide(clean(stored.record));
      if (write === undefined) return { record: clean(stored.record), written: false };
      const { nextAttemptAt, ...change } = write.change;
      const next = clean({ ...stored.record, ...change, operationId, identity: stored.record.identity });
      stored.record = next;
      if ('nextAttemptAt' in write.change) stored.nextAttemptAt = nextAttemptAt;
      if (write.closeOpenAttempts !== undefined) {
        const { at, outcome, detail } = write.closeOpenAttempts;
        closeOpen(operationId, at, outcome, detail);
      }
      if (write.startAttempt !== undefined)
        state.attempts.set(write.startAttempt.attemptId, {
          attemptId: write.startAttempt.attemptId,
          operationId,
          number: next.attemptCount,
          workerId: write.startAttempt.workerId,
          startedAt: write.startAttempt.startedAt,
        });
      return { record: clean(next), written: true };
    },
    async finishAttempt(attemptId, end: AttemptEnd) {
      guard(end.signal);
      const attempt = state.attempts.get(attemptId);
      if (attempt === undefined) return;
      state.attempts.set(
        attemptId,
        clean({ ...attempt, endedAt: end.endedAt, outcome: end.outcome, detail: end.detail }),
      );
    },
  };
}
