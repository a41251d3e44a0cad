import { type Clock, storageCauseFields, type Logger } from 'idem';
import type { Housekeeping } from 'idem/store';

export interface SweeperOptions {
  intervalMs: number;
  batchSize: number;
  /** Most share of a sweep's time spent in batches (SweepOptions.maxDuty); the store's default if unset. */
  maxDuty?: number;
  tombstoneTtlMs: number;
  /** Delivered outbox messages older than this are deleted (the receipts' retention); kept if unset. */
  outboxRetentionMs?: number;
  clock: Clock;
  logger: Logger;
  /**
   * Runs after each sweep, also after a failed one (it may need only reads), never once stopping
   * began; the next sweep waits for it, and stopping aborts `signal` and waits for it too. For
   * what expires with the receipts outside the store (command output files). A throw is logged as
   * `idem.after_sweep_failed`.
   */
  afterSweep?: (options: { signal: AbortSignal }) => Promise<void>;
}

/**
 * Periodically turns expired receipts into tombstones, deletes expired tombstones and delivered
 * outbox messages past `outboxRetentionMs`, in small batches (one short transaction each), then
 * runs `afterSweep`. Returns a function that stops it. The timer never keeps the process alive.
 */
export function startSweeper(
  store: { housekeeping: Housekeeping },
  options: SweeperOptions,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const controller = new AbortController();
  const { signal } = controller;
  const pass = async () => {
    const started = options.clock.monotonic();
    try {
      const result = await store.housekeeping.sweep({
        now: options.clock.now(),
        tombstoneTtlMs: options.tombstoneTtlMs,
        batchSize: options.batchSize,
        ...(options.maxDuty === undefined ? {} : { maxDuty: options.maxDuty }),
        ...(options.outboxRetentionMs === undefined ? {} : { outboxRetentionMs: options.outboxRetentionMs }),
        signal,
      });
      if (result.tombstoned + result.tombstonesDeleted + result.outboxDeleted > 0) {
        options.logger.info('idem.sweep', {
          tombstoned: result.tombstoned,
          tombstones_deleted: result.tombstonesDeleted,
          outbox_deleted: result.outboxDeleted,
          batches: result.batches,
          duration_ms: Math.round(options.clock.monotonic() - started),
        });
      }
    } catch (error) {
      if (!signal.aborted) {
        options.logger.warn('idem.sweep_failed', {
          code: (error as { code?: string }).code ?? 'internal',
          ...storageCauseFields(error),
        });
      }
    }
    if (options.afterSweep === undefined || signal.aborted) return;
    try {
      await options.afterSweep({ signal });
    } catch (error) {
      if (!signal.aborted) {
        options.logger.warn('idem.after_sweep_failed', {
          code: (error as { code?: string }).code ?? 'internal',
          ...storageCauseFields(error),
        });
      }
    }
  };
  const tick = () => {
    if (running !== undefined) return;
    running = pass().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    controller.abort();
    await running;
  };
}
