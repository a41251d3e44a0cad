import { IdemError } from '../core/errors.js';
import type { OutboxMessage } from '../core/operation-record.js';
import { isTerminal } from '../core/operation-state.js';
import type { Housekeeping, SweepOptions, SweepResult } from '../ports/housekeeping.js';
import type { OutboxSettlement, OutboxStore } from '../ports/outbox-store.js';
import { clean, identityKey, type Guard, type MemoryState, type StoredMessage } from './memory-state.js';

/** Stored reasons are cut to this length, as the SQL stores do. */
const MAX_ERROR_LENGTH = 500;

/** The memory store's outbox: leases and settlements over the messages its transactions committed. */
export function memoryOutbox(state: MemoryState, guard: Guard): OutboxStore {
  const release = (stored: StoredMessage) => {
    delete stored.leaseOwner;
    delete stored.leaseExpiresAt;
  };
  return {
    async claim(options) {
      guard(options.signal);
      const claimed: OutboxMessage[] = [];
      for (const stored of [...state.outbox.values()].sort((a, b) => a.message.id - b.message.id)) {
        if (claimed.length >= options.limit) break;
        const { message } = stored;
        if (message.dispatchedAt !== undefined || message.deadAt !== undefined) continue;
        if (stored.nextAttemptAt > options.now) continue;
        if (stored.leaseExpiresAt !== undefined && stored.leaseExpiresAt > options.now) continue;
        stored.leaseOwner = options.workerId;
        stored.leaseExpiresAt = options.now + options.leaseMs;
        stored.message = { ...message, attempts: message.attempts + 1 };
        claimed.push(clean(stored.message));
      }
      return claimed;
    },
    async settle(id, workerId, settlement: OutboxSettlement, options = {}) {
      guard(options.signal);
      const stored = state.outbox.get(id);
      if (stored === undefined || stored.leaseOwner !== workerId) return false;
      const { message } = stored;
      if (settlement.kind === 'delivered') {
        stored.message = { ...message, dispatchedAt: settlement.at };
      } else if (settlement.kind === 'retry') {
        stored.nextAttemptAt = settlement.at;
        stored.message = { ...message, lastError: settlement.error.slice(0, MAX_ERROR_LENGTH) };
      } else {
        if (message.dispatchedAt !== undefined || message.deadAt !== undefined) return false;
        stored.message = {
          ...message,
          deadAt: settlement.at,
          lastError: settlement.error.slice(0, MAX_ERROR_LENGTH),
        };
      }
      release(stored);
      return true;
    },
    async deadLetters(options = {}) {
      guard(options.signal);
      return [...state.outbox.values()]
        .filter((s) => s.message.deadAt !== undefined)
        .sort((a, b) => (a.message.deadAt ?? 0) - (b.message.deadAt ?? 0) || a.message.id - b.message.id)
        .slice(0, options.limit ?? 100)
        .map((s) => clean(s.message));
    },
    async requeue(id, now, options = {}) {
      guard(options.signal);
      const stored = state.outbox.get(id);
      if (stored?.message.deadAt === undefined) return undefined;
      const { deadAt: _dead, ...message } = stored.message;
      stored.message = { ...message, attempts: 0 };
      stored.nextAttemptAt = now;
      release(stored);
      return clean(stored.message);
    },
  };
}

/** The memory store's sweep: the SQL stores' batches, without pauses (it blocks nobody for long). */
export function memoryHousekeeping(state: MemoryState, guard: Guard): Housekeeping {
  return {
    async sweep(options: SweepOptions): Promise<SweepResult> {
      guard(options.signal);
      const { maxDuty } = options;
      if (maxDuty !== undefined && !(maxDuty > 0 && maxDuty <= 1))
        throw new IdemError('invalid_argument', `maxDuty must be in (0, 1], got ${maxDuty}`);
      if (!Number.isInteger(options.batchSize) || options.batchSize < 1)
        throw new IdemError(
          'invalid_argument',
          `batchSize must be a positive integer, got ${options.batchSize}`,
        );
      const rows = options.batchSize;
      const deliveredBy =
        options.outboxRetentionMs === undefined ? undefined : options.now - options.outboxRetentionMs;
      const result = { tombstoned: 0, tombstonesDeleted: 0, outboxDeleted: 0, batches: 0 };
      while (result.batches < (options.maxBatches ?? Number.POSITIVE_INFINITY)) {
        guard(options.signal);
        const expired = [...state.operations.values()]
          .filter(
            (s) =>
              isTerminal(s.record.status) &&
              s.record.expiresAt !== undefined &&
              s.record.expiresAt <= options.now,
          )
          .sort((a, b) => (a.record.expiresAt ?? 0) - (b.record.expiresAt ?? 0) || a.seq - b.seq)
          .slice(0, rows);
        for (const { record } of expired) {
          const expiresAt = record.expiresAt ?? options.now;
          state.tombstones.set(identityKey(record.identity), {
            identity: structuredClone(record.identity),
            fingerprint: record.fingerprint,
            receiptExpiredAt: expiresAt,
            expiresAt: expiresAt + options.tombstoneTtlMs,
          });
          state.deleteOperation(record.operationId);
        }
        const gone = [...state.tombstones.entries()]
          .filter(([, t]) => t.expiresAt <= options.now)
          .sort(([, a], [, b]) => a.expiresAt - b.expiresAt)
          .slice(0, rows);
        for (const [key] of gone) state.tombstones.delete(key);
        const delivered =
          deliveredBy === undefined
            ? []
            : [...state.outbox.values()]
                .filter((s) => s.message.dispatchedAt !== undefined && s.message.dispatchedAt <= deliveredBy)
                .sort((a, b) => (a.message.dispatchedAt ?? 0) - (b.message.dispatchedAt ?? 0))
                .slice(0, rows);
        for (const { message } of delivered) {
          state.outbox.delete(message.id);
          state.outboxByDedupKey.delete(message.dedupKey);
        }
        if (expired.length === 0 && gone.length === 0 && delivered.length === 0) break;
        result.tombstoned += expired.length;
        result.tombstonesDeleted += gone.length;
        result.outboxDeleted += delivered.length;
        result.batches += 1;
        // Lets callers in between batches, as a store with a real lock would.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return result;
    },
  };
}
