import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { startSweeper } from '../../packages/idem-cli/src/server/sweeper.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import type { SweepOptions, SweepResult } from '../../packages/idem/src/ports/housekeeping.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import { memoryLogger } from '../operations/operations-fixtures.js';

/** Polls (real time) until `check` holds, or fails after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

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

describe('startSweeper afterSweep', () => {
  it('runs after each sweep, also a failed one, never beside the next sweep', async () => {
    const events: string[] = [];
    let sweeps = 0;
    const store: Pick<IdemStore, 'housekeeping'> = {
      housekeeping: {
        sweep: async () => {
          events.push('sweep');
          sweeps += 1;
          if (sweeps === 2) throw new IdemError('unavailable', 'locked');
          return { tombstoned: 0, tombstonesDeleted: 0, outboxDeleted: 0, batches: 0 };
        },
      },
    };
    const logger = memoryLogger();
    const stop = startSweeper(store, {
      intervalMs: 5,
      batchSize: 50,
      tombstoneTtlMs: 1000,
      clock: new FakeClock(),
      logger,
      afterSweep: async ({ signal }) => {
        expect(signal.aborted).toBe(false);
        events.push('after');
        // Slower than the interval: the ticks in between must not start another sweep.
        await new Promise((resolve) => setTimeout(resolve, 20));
        events.push('after done');
      },
    });
    await until(() => events.filter((e) => e === 'after done').length >= 3);
    await stop();
    expect(events.slice(0, 9)).toEqual([
      'sweep',
      'after',
      'after done',
      'sweep',
      'after',
      'after done',
      'sweep',
      'after',
      'after done',
    ]);
    expect(logger.events('idem.sweep_failed')).toEqual([{ code: 'unavailable' }]);
  });

  it('stopping aborts its signal and waits for it; a throw is logged and the next sweep still runs', async () => {
    const calls: SweepOptions[] = [];
    const logger = memoryLogger();
    let hooks = 0;
    let aborted = false;
    let settled = false;
    const stop = startSweeper(recordingStore(calls), {
      intervalMs: 5,
      batchSize: 50,
      tombstoneTtlMs: 1000,
      clock: new FakeClock(),
      logger,
      afterSweep: async ({ signal }) => {
        hooks += 1;
        if (hooks === 1) throw new IdemError('unavailable', 'the directory cannot be listed');
        // The second one runs until it is stopped.
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        await new Promise((resolve) => setTimeout(resolve, 20));
        aborted = signal.aborted;
        settled = true;
      },
    });
    await until(() => hooks === 2);
    await stop();
    expect(aborted).toBe(true);
    expect(settled).toBe(true);
    expect(calls).toHaveLength(2);
    expect(logger.events('idem.after_sweep_failed')).toEqual([{ code: 'unavailable' }]);
  });
});
