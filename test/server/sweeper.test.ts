import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/logger.js';
import { startSweeper } from '../../src/server/sweeper.js';
import type { IdemStore } from '../../src/ports/idem-store.js';
import type { SweepOptions, SweepResult } from '../../src/ports/housekeeping.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

/** A store that only records the options of each sweep it is asked for. */
function recordingStore(calls: SweepOptions[]): Pick<IdemStore, 'housekeeping'> {
  return {
    housekeeping: {
      sweep: (options: SweepOptions): Promise<SweepResult> => {
        calls.push(options);
        return Promise.resolve({ tombstoned: 0, tombstonesDeleted: 0, outboxDeleted: 0, batches: 0 });
      },
    },
  };
}

async function firstSweep(maxDuty?: number, outboxRetentionMs?: number): Promise<SweepOptions> {
  const calls: SweepOptions[] = [];
  const stop = startSweeper(recordingStore(calls), {
    intervalMs: 5,
    batchSize: 50,
    tombstoneTtlMs: 1000,
    clock: new FakeClock(),
    logger: silentLogger,
    ...(maxDuty === undefined ? {} : { maxDuty }),
    ...(outboxRetentionMs === undefined ? {} : { outboxRetentionMs }),
  });
  while (calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await stop();
  return calls[0] as SweepOptions;
}

describe('startSweeper', () => {
  it("passes the server's sweep pacing to the store", async () => {
    const options = await firstSweep(0.25);
    expect(options.maxDuty).toBe(0.25);
    expect(options.batchSize).toBe(50);
  });

  it("leaves the pacing to the store's default when none is set", async () => {
    expect((await firstSweep()).maxDuty).toBeUndefined();
  });

  it("passes the receipts' retention for delivered outbox messages, and none when unset", async () => {
    expect((await firstSweep(undefined, 86_400_000)).outboxRetentionMs).toBe(86_400_000);
    expect((await firstSweep()).outboxRetentionMs).toBeUndefined();
  });
});
