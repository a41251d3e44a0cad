/**
 * Default duration of one sweep batch, ms: short against a first execution's own commit. In the
 * bench (fast disk) 0.25 ms cut the p99 of a writer during a sweep from 1.2-1.35 ms to 0.9-0.95 ms
 * against 0.5 ms, and halved the sweep's speed (1M receipts in 20 s instead of 11 s).
 */
export const DEFAULT_SWEEP_BATCH_BUDGET_MS = 0.25;

/** Default most share of its wall time a sweep spends in batches (the rest it waits). */
export const DEFAULT_SWEEP_MAX_DUTY = 0.5;

/**
 * How long to wait after a batch that took `tookMs` so that batches fill at most `maxDuty` of the
 * time (like PostgreSQL's vacuum cost delay): callers' commits then find the disk idle about
 * `1 - maxDuty` of the time. `maxDuty` 1 never waits.
 */
export function pauseAfterBatch(tookMs: number, maxDuty: number): number {
  if (!(maxDuty > 0 && maxDuty <= 1)) throw new RangeError('maxDuty must be in (0, 1]');
  return Math.max(0, tookMs) * (1 / maxDuty - 1);
}

/**
 * Sizes the next batch of a background job (the sweeper) so that each batch takes about
 * `budgetMs`: a batch holds the database's single writer (SQLite) for its whole duration, so its
 * length, not its row count, is what a concurrent caller waits for. Pure: the caller measures.
 */
export class BatchSizer {
  readonly #max: number;
  readonly #min: number;
  readonly #budgetMs: number;
  #size: number;

  /**
   * `max` rows at most per batch, and at least `min` (default 1; capped at `max`) however slow a
   * row is; the first batch takes `min(max, start)`.
   */
  constructor(options: { max: number; budgetMs: number; start?: number; min?: number }) {
    if (!Number.isInteger(options.max) || options.max < 1)
      throw new RangeError('max must be a positive integer');
    if (!(options.budgetMs > 0)) throw new RangeError('budgetMs must be positive');
    this.#max = options.max;
    this.#min = Math.min(options.max, Math.max(1, Math.floor(options.min ?? 1)));
    this.#budgetMs = options.budgetMs;
    this.#size = Math.max(this.#min, Math.min(options.max, options.start ?? 32));
  }

  /** Rows to take in the next batch. */
  get size(): number {
    return this.#size;
  }

  /**
   * Records that a batch of `rows` took `elapsedMs`. The next size is scaled towards the budget
   * (`budgetMs` for the next batch only, else the sizer's own), at most doubling and at least
   * halving per batch so that one noisy measurement cannot swing it, and never below `min`.
   */
  record(rows: number, elapsedMs: number, budgetMs = this.#budgetMs): void {
    if (rows <= 0) return;
    const perRow = Math.max(elapsedMs, 0) / rows;
    const fitting = perRow === 0 ? this.#max : Math.floor(budgetMs / perRow);
    const next = Math.min(fitting, this.#size * 2, this.#max);
    // Both bounds are within [min, max] already: next is capped by max, half the size by the size.
    this.#size = Math.max(this.#min, Math.ceil(this.#size / 2), next);
  }
}

/**
 * Fewest rows a sweep batch shrinks to (fewer when `batchSize` is smaller). Below it a batch's fixed
 * cost (its transaction, its COMMIT, its turn in the write queue) outweighs its rows: on a loaded
 * machine, where every batch runs over its budget, the sizer would otherwise halve down to a row or
 * two a batch and the sweep would fall behind the receipts callers create (issue 22: 340 rows/s
 * beside 950 inserts/s).
 */
export const MIN_SWEEP_BATCH_ROWS = 16;

/**
 * Most a sweep stretches its batch budget while it has a backlog and no caller waits for the lock:
 * 4 times `batchBudgetMs` (1 ms at the default). A caller found waiting at the end of a batch brings
 * it back to `batchBudgetMs` at once.
 */
export const SWEEP_BACKLOG_BUDGET_FACTOR = 4;

/** What a sweep batch did and found, as SweepPacer.record takes it. */
export interface SweepBatchReport {
  /** Rows it handled (the largest of its statements' counts). */
  readonly rows: number;
  /** Whether it took as many rows as it asked for: a backlog is left. */
  readonly full: boolean;
  /**
   * How long it held the write lock, ms: from its first statement to its COMMIT, not its wait for
   * the lock behind callers (that time is theirs, and pausing for it would slow the sweep most
   * exactly when callers create the most receipts).
   */
  readonly heldMs: number;
  /** Callers' writes queued for the lock when it ended. */
  readonly callersWaiting: number;
}

/**
 * The pacing of one sweep on a store whose batches block callers (SQLite's single writer): how many
 * rows the next batch takes and how long to wait before it. Pure: the caller measures.
 *
 * - Each batch is sized to take about the batch budget (BatchSizer), never under
 *   MIN_SWEEP_BATCH_ROWS.
 * - The budget adapts to the backlog: while batches come back full and no caller was waiting when
 *   one ended, it doubles per batch up to SWEEP_BACKLOG_BUDGET_FACTOR times `batchBudgetMs`; a
 *   waiting caller or a batch that was not full brings it back to `batchBudgetMs`.
 * - After each batch it waits so that batches hold the lock at most `maxDuty` of the sweep's wall
 *   time: `heldMs * (1 / maxDuty - 1)`.
 */
export class SweepPacer {
  readonly #sizer: BatchSizer;
  readonly #budgetMs: number;
  readonly #maxDuty: number;
  #factor = 1;

  constructor(options: { batchSize: number; batchBudgetMs?: number; maxDuty?: number }) {
    this.#budgetMs = options.batchBudgetMs ?? DEFAULT_SWEEP_BATCH_BUDGET_MS;
    this.#maxDuty = options.maxDuty ?? DEFAULT_SWEEP_MAX_DUTY;
    if (!(this.#maxDuty > 0 && this.#maxDuty <= 1)) throw new RangeError('maxDuty must be in (0, 1]');
    this.#sizer = new BatchSizer({
      max: options.batchSize,
      budgetMs: this.#budgetMs,
      min: MIN_SWEEP_BATCH_ROWS,
    });
  }

  /** Rows the next batch takes. */
  get size(): number {
    return this.#sizer.size;
  }

  /** The budget of the next batch, ms. */
  get budgetMs(): number {
    return this.#budgetMs * this.#factor;
  }

  /** Records a batch; returns how long to wait before the next one, ms (0: go on at once). */
  record(batch: SweepBatchReport): number {
    this.#factor =
      batch.full && batch.callersWaiting === 0 ? Math.min(SWEEP_BACKLOG_BUDGET_FACTOR, this.#factor * 2) : 1;
    this.#sizer.record(batch.rows, batch.heldMs, this.budgetMs);
    return pauseAfterBatch(batch.heldMs, this.#maxDuty);
  }
}
