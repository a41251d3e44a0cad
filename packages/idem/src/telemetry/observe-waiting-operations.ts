import type { BatchObservableCallback } from '@opentelemetry/api';
import { systemClock, type Clock } from '../core/clock.js';
import { timeoutSignal } from '../core/timeout-signal.js';
import type { IdemStore } from '../ports/idem-store.js';
import { SCOPE } from './idem-instruments.js';
import { otelApi } from './otel-api.js';

/** How `observeWaitingOperations` reads the store. */
export interface ObserveWaitingOptions {
  /** Most rows read per state and per read; the counts stop there. Default 1000. */
  readonly limit?: number;
  /** A collection within this long of the last read reports that read again. Default 15 s. */
  readonly minIntervalMs?: number;
  /** A read that takes longer is abandoned for this collection (the last values are reported). Default 2 s. */
  readonly timeoutMs?: number;
  /** Default `systemClock`. */
  readonly clock?: Clock;
}

interface Reading {
  readonly unknown: number;
  readonly oldestAgeS: number;
  readonly deadLetters: number;
}

/**
 * Registers observable gauges of what waits for a person, read from `store` when a metric reader
 * collects: `idem.operations.outcome_unknown` (operations in `outcome_unknown`),
 * `idem.operations.outcome_unknown.oldest_age` (seconds since the oldest of them last changed) and
 * `idem.outbox.dead_letters`. Bounded: at most one read in flight, at most one every
 * `minIntervalMs`, at most `limit` rows per state (a count at the limit means "at least"), and a
 * collection waits at most `timeoutMs` for a read. Call it after the meter provider is registered;
 * returns a function that unregisters the gauges. Does nothing without `@opentelemetry/api`.
 */
export function observeWaitingOperations(
  store: Pick<IdemStore<unknown>, 'ledger' | 'outbox'>,
  options: ObserveWaitingOptions = {},
): () => void {
  const api = otelApi();
  if (api === undefined) return () => undefined;
  const limit = options.limit ?? 1000;
  const minIntervalMs = options.minIntervalMs ?? 15_000;
  const timeoutMs = options.timeoutMs ?? 2000;
  const clock = options.clock ?? systemClock;
  const meter = api.metrics.getMeterProvider().getMeter(SCOPE);
  const unknown = meter.createObservableGauge('idem.operations.outcome_unknown', {
    description: 'Operations whose outcome is unknown, waiting for an operator to settle them',
    unit: '{operation}',
  });
  const oldest = meter.createObservableGauge('idem.operations.outcome_unknown.oldest_age', {
    description: 'How long the oldest outcome_unknown operation has waited',
    unit: 's',
  });
  const dead = meter.createObservableGauge('idem.outbox.dead_letters', {
    description: 'Outbox messages that exhausted their attempts, waiting to be requeued',
    unit: '{message}',
  });

  let last: Reading | undefined;
  let readAt = -Infinity;
  let reading: Promise<void> | undefined;
  const read = async (): Promise<void> => {
    // A read the collection stopped waiting for is still ended, later, by this bound.
    const timeout = timeoutSignal(Math.max(timeoutMs * 5, 10_000));
    const signal = timeout.signal;
    const [waiting, letters] = await Promise.all([
      store.ledger.list({ status: 'outcome_unknown', limit, signal }),
      store.outbox.deadLetters({ limit, signal }),
    ]).finally(() => timeout.dispose());
    const now = clock.now();
    const since = waiting.reduce((min, op) => Math.min(min, op.updatedAt), now);
    last = { unknown: waiting.length, oldestAgeS: (now - since) / 1000, deadLetters: letters.length };
  };
  const callback: BatchObservableCallback = async (result) => {
    if (reading === undefined && clock.monotonic() - readAt >= minIntervalMs) {
      readAt = clock.monotonic();
      reading = read()
        .catch(() => undefined)
        .finally(() => {
          reading = undefined;
        });
    }
    if (reading !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        reading,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    }
    if (last === undefined) return;
    result.observe(unknown, last.unknown);
    result.observe(oldest, last.oldestAgeS);
    result.observe(dead, last.deadLetters);
  };
  meter.addBatchObservableCallback(callback, [unknown, oldest, dead]);
  return () => meter.removeBatchObservableCallback(callback, [unknown, oldest, dead]);
}
