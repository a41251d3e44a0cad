import { DEFAULT_SWEEP_MAX_DUTY, SweepPacer } from '../../core/batch-sizer.js';
import type { Clock } from '../../core/clock.js';
import { IdemError } from '../../core/errors.js';
import { run, step, type Steps } from '../../core/steps.js';
import type { Housekeeping, SweepOptions, SweepResult } from '../../ports/housekeeping.js';
import type { SharedSql } from './shared-sql.js';
import type { SqlConnection, SqlDriver } from './sql-driver.js';

/** After this many batches a sweep counts as long (`SweepPacing.longSweep`). */
export const LONG_SWEEP_BATCHES = 8;

interface BatchCounts {
  readonly moved: number;
  readonly deleted: number;
  readonly delivered: number;
}

/**
 * Retention over any SQL driver. Each batch is its own short, non-durable transaction: expired
 * final records become tombstones (their attempts go), old tombstones and delivered messages go.
 * Where batches block writers (the driver's `sweepPacing`), SweepPacer sizes each batch to a time
 * budget that stretches while a backlog is left and no caller waits, and spaces batches to a duty
 * cycle of the time they hold the lock; elsewhere each takes `batchSize` rows and the next follows
 * at once.
 */
export class SqlHousekeeping implements Housekeeping {
  readonly #driver: SqlDriver<unknown>;
  readonly #sql: SharedSql;
  readonly #clock: Clock;

  constructor(driver: SqlDriver<unknown>, sql: SharedSql, clock: Clock) {
    this.#driver = driver;
    this.#sql = sql;
    this.#clock = clock;
  }

  async sweep(options: SweepOptions): Promise<SweepResult> {
    const maxDuty = options.maxDuty ?? DEFAULT_SWEEP_MAX_DUTY;
    // A bad maxDuty fails before any batch, as a caller's error.
    if (!(maxDuty > 0 && maxDuty <= 1))
      throw new IdemError('invalid_argument', `maxDuty must be in (0, 1], got ${String(maxDuty)}`);
    const pacing = this.#driver.sweepPacing;
    const pacer = pacing?.blocksWriters === true ? new SweepPacer({ ...options, maxDuty }) : undefined;
    const deliveredBy =
      options.outboxRetentionMs === undefined ? undefined : options.now - options.outboxRetentionMs;
    const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
    const sql = this.#sql;
    const clock = this.#clock;
    const sync = this.#driver.capabilities.synchronous;
    /** When the running batch got the write lock (its first statement). */
    let heldSince = 0;
    let rows = options.batchSize;
    function* batch(conn: SqlConnection): Steps<BatchCounts> {
      heldSince = clock.monotonic();
      rows = pacer?.size ?? options.batchSize;
      const expired = yield* step(conn.all<{ operation_id: string }>(sql.expired, [options.now, rows]));
      let moved = 0;
      if (expired.length > 0) {
        const ids = expired.map((row) => row.operation_id);
        const statements = sql.expiredBatch(ids.length);
        yield conn.run(statements.tombstone, [options.tombstoneTtlMs, ...ids]);
        yield conn.run(statements.deleteAttempts, ids);
        moved = yield* step(conn.run(statements.deleteOperations, ids));
      }
      const deleted = yield* step(conn.run(sql.deleteTombstones, [options.now, rows]));
      const delivered =
        deliveredBy === undefined ? 0 : yield* step(conn.run(sql.deleteDelivered, [deliveredBy, rows]));
      return { moved, deleted, delivered };
    }

    let tombstoned = 0;
    let tombstonesDeleted = 0;
    let outboxDeleted = 0;
    let batches = 0;
    let endLongSweep: (() => Promise<void>) | undefined;
    try {
      while (batches < maxBatches) {
        options.signal?.throwIfAborted();
        // Not durable: a batch lost in a power failure leaves expired receipts for the next sweep.
        const counts = await this.#driver.transaction((conn) => run(batch(conn), sync, 'a sweep batch'), {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          durable: false,
        });
        if (counts.moved === 0 && counts.deleted === 0 && counts.delivered === 0) break;
        tombstoned += counts.moved;
        tombstonesDeleted += counts.deleted;
        outboxDeleted += counts.delivered;
        batches += 1;
        if (batches === LONG_SWEEP_BATCHES) endLongSweep = pacing?.longSweep?.();
        if (pacer === undefined) continue;
        // Let queued writers in between batches, and leave them the lock and the disk for a while:
        // as long as the batch held the lock (COMMIT included), not its wait behind callers.
        const handled = Math.max(counts.moved, counts.deleted, counts.delivered);
        const pause = pacer.record({
          rows: handled,
          full: handled >= rows,
          heldMs: clock.monotonic() - heldSince,
          callersWaiting: pacing?.callersWaiting?.() ?? 0,
        });
        if (pause > 0) await clock.sleep(pause, options);
        else await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      await endLongSweep?.();
    }
    return { tombstoned, tombstonesDeleted, outboxDeleted, batches };
  }
}
