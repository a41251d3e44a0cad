import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { observeWaitingOperations } from '../../packages/idem/src/telemetry/observe-waiting-operations.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';

class TestReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

afterEach(() => metrics.disable());

/** A store whose two reads answer `unknownUpdatedAt.length` operations and `dead` dead letters, counting reads. */
function fakeStore(clock: FakeClock, unknownUpdatedAt: number[], dead: number) {
  const reads = { list: 0, dead: 0, limits: [] as number[] };
  const store = {
    ledger: {
      list: (options: { status?: string; limit?: number }) => {
        reads.list += 1;
        reads.limits.push(options.limit ?? -1);
        expect(options.status).toBe('outcome_unknown');
        return Promise.resolve(unknownUpdatedAt.map((ago) => ({ updatedAt: clock.now() - ago })));
      },
    },
    outbox: {
      deadLetters: () => {
        reads.dead += 1;
        return Promise.resolve(Array.from({ length: dead }, () => ({})));
      },
    },
  } as unknown as Pick<IdemStore<unknown>, 'ledger' | 'outbox'>;
  return { store, reads };
}

async function gauges(reader: TestReader): Promise<Record<string, number>> {
  const { resourceMetrics } = await reader.collect();
  const values: Record<string, number> = {};
  for (const scope of resourceMetrics.scopeMetrics)
    for (const metric of scope.metrics)
      values[metric.descriptor.name] = (metric.dataPoints[0] as DataPoint<number>).value;
  return values;
}

describe('observeWaitingOperations', () => {
  it('reports the outcome_unknown count, the oldest wait and the dead letters, read at most once per interval', async () => {
    const clock = new FakeClock();
    const reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const { store, reads } = fakeStore(clock, [5_000, 90_000, 30_000], 2);
    const stop = observeWaitingOperations(store, { clock, limit: 50, minIntervalMs: 15_000 });
    expect(await gauges(reader)).toEqual({
      'idem.operations.outcome_unknown': 3,
      'idem.operations.outcome_unknown.oldest_age': 90,
      'idem.outbox.dead_letters': 2,
    });
    // Within the interval a collection reports the last read without reading again.
    clock.advance(10_000);
    await gauges(reader);
    expect(reads).toEqual({ list: 1, dead: 1, limits: [50] });
    clock.advance(5_000);
    await gauges(reader);
    expect(reads.list).toBe(2);
    stop();
    // Unregistered: collections no longer read the store.
    clock.advance(60_000);
    await gauges(reader);
    expect(reads.list).toBe(2);
  });

  it('reports nothing until a read succeeds, and never throws into the collection', async () => {
    const clock = new FakeClock();
    const reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const store = {
      ledger: { list: () => Promise.reject(new Error('db down')) },
      outbox: { deadLetters: () => Promise.resolve([]) },
    } as unknown as Pick<IdemStore<unknown>, 'ledger' | 'outbox'>;
    const stop = observeWaitingOperations(store, { clock });
    expect(await gauges(reader)).toEqual({});
    stop();
  });
});
