import type { OperationIdentity } from '../core/operation-identity.js';
import type { AttemptRecord, OperationRecord, OutboxMessage } from '../core/operation-record.js';
import type { Tombstone } from '../core/receipt.js';
import { MemoryTables } from './memory-tables.js';

/** Checks the signal (rejecting with its reason) and that the store is open. */
export type Guard = (signal: AbortSignal | undefined) => void;

/** An operation as the memory store keeps it: the record, its backoff, and its creation order. */
export interface StoredOperation {
  record: OperationRecord;
  nextAttemptAt?: number;
  readonly seq: number;
}

/** An outbox message with the fields a dispatcher's lease and backoff need. */
export interface StoredMessage {
  message: OutboxMessage;
  nextAttemptAt: number;
  leaseOwner?: string;
  leaseExpiresAt?: number;
}

/** Everything one memory store holds; every port of the store reads and writes this one object. */
export class MemoryState {
  /** By operation id. */
  readonly operations = new Map<string, StoredOperation>();
  /** Identity key -> operation id. */
  readonly byIdentity = new Map<string, string>();
  /** Identity key -> tombstone. */
  readonly tombstones = new Map<string, Tombstone>();
  /** By attempt id, in insertion order. */
  readonly attempts = new Map<string, AttemptRecord>();
  readonly outbox = new Map<number, StoredMessage>();
  readonly outboxByDedupKey = new Map<string, number>();
  readonly tables = new MemoryTables();
  /** Operation name -> every version it was ever recorded under (never shrinks). */
  readonly #versions = new Map<string, Set<number>>();
  #seq = 0;
  #outboxId = 0;

  nextSeq(): number {
    return (this.#seq += 1);
  }

  nextOutboxId(): number {
    return (this.#outboxId += 1);
  }

  operationOf(identity: OperationIdentity): StoredOperation | undefined {
    const id = this.byIdentity.get(identityKey(identity));
    return id === undefined ? undefined : this.operations.get(id);
  }

  /**
   * The versions to look for a key under, in the order the ports promise: the identity's own, then
   * every other version its operation was recorded under, oldest first.
   */
  versionsOf(identity: OperationIdentity): number[] {
    const others = [...(this.#versions.get(identity.operation) ?? [])]
      .filter((v) => v !== identity.version)
      .sort((a, b) => a - b);
    return [identity.version, ...others];
  }

  /** Inserts or replaces the record of its identity (a replaced record keeps its creation order). */
  putRecord(record: OperationRecord): void {
    const { operation, version } = record.identity;
    const versions = this.#versions.get(operation) ?? new Set<number>();
    this.#versions.set(operation, versions.add(version));
    const key = identityKey(record.identity);
    const previousId = this.byIdentity.get(key);
    const previous = previousId === undefined ? undefined : this.operations.get(previousId);
    if (previousId !== undefined && previousId !== record.operationId) this.operations.delete(previousId);
    const kept = this.operations.get(record.operationId) ?? previous;
    const stored: StoredOperation = { record: clean(record), seq: kept?.seq ?? this.nextSeq() };
    if (kept?.nextAttemptAt !== undefined && previousId === record.operationId)
      stored.nextAttemptAt = kept.nextAttemptAt;
    this.operations.set(record.operationId, stored);
    this.byIdentity.set(key, record.operationId);
  }

  deleteOperation(operationId: string): void {
    const stored = this.operations.get(operationId);
    if (stored === undefined) return;
    this.operations.delete(operationId);
    this.byIdentity.delete(identityKey(stored.record.identity));
    for (const [id, attempt] of this.attempts)
      if (attempt.operationId === operationId) this.attempts.delete(id);
  }
}

/** The idempotency key in every version of its operation: the identity without `version`. */
export function keyOf(identity: OperationIdentity): string {
  return JSON.stringify([identity.principal, identity.workspace, identity.operation, identity.key]);
}

export function identityKey(identity: OperationIdentity): string {
  return JSON.stringify([
    identity.principal,
    identity.workspace,
    identity.operation,
    identity.version,
    identity.key,
  ]);
}

/** A deep copy without the keys whose value is undefined (what a database row reads back as). */
export function clean<T extends object>(value: T): T {
  const copy = structuredClone(value) as Record<string, unknown>;
  for (const key of Object.keys(copy)) if (copy[key] === undefined) delete copy[key];
  return copy as T;
}
