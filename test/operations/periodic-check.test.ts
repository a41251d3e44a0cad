import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { CancelWatch } from '../../packages/idem/src/operations/cancel-watch.js';
import { LeaseKeeper } from '../../packages/idem/src/operations/lease-keeper.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { eventually, memoryLogger } from './operations-fixtures.js';

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('CancelWatch', () => {
  const watch = (read: () => Promise<Pick<OperationRecord, 'status'> | undefined>) => {
    const clock = new FakeClock();
    const logger = memoryLogger();
    const reads: number[] = [];
    const w = new CancelWatch({
      ledger: {
        get: async () => {
          reads.push(clock.monotonic());
          return (await read()) as OperationRecord | undefined;
        },
      },
      clock,
      logger,
      operationId: 'op_1',
      intervalMs: 200,
    });
    return { clock, logger, reads, w };
  };

  it('reads every intervalMs; a failed read is logged and retried; a cancel request aborts the signal', async () => {
    const answers: Array<() => Promise<Pick<OperationRecord, 'status'>>> = [
      async () => ({ status: 'running' }),
      async () => {
        throw new Error('busy');
      },
      async () => ({ status: 'cancel_requested' }),
    ];
    const t = watch(() => (answers.shift() ?? (async () => ({ status: 'running' })))());
    t.w.start();
    t.clock.advance(199);
    await settle();
    expect(t.reads).toEqual([]);
    t.clock.advance(1);
    for (const reads of [1, 2, 3]) {
      await eventually(() => t.reads.length === reads);
      if (reads < 3) {
        // The next wait has begun: only then does advancing the clock end it.
        await eventually(() => t.clock.pendingSleepers === 1);
        t.clock.advance(200);
      }
    }
    expect(t.reads).toEqual([200, 400, 600]);
    expect(t.logger.events('op.cancel_watch_failed')).toEqual([{ operation_id: 'op_1', message: 'busy' }]);
    await eventually(() => t.w.signal.aborted);
    expect((t.w.signal.reason as Error).message).toBe('cancel of op_1 requested');
    expect(t.logger.events('op.cancel_observed')).toEqual([{ operation_id: 'op_1' }]);
    // Tripped: no read after that.
    t.clock.advance(1_000);
    await settle();
    expect(t.reads).toHaveLength(3);
    await t.w.stop();
  });

  it('stop during a read: the answer is ignored, stop resolves once the read is done', async () => {
    const answer = deferred<Pick<OperationRecord, 'status'>>();
    const t = watch(() => answer.promise);
    t.w.start();
    t.clock.advance(200);
    await eventually(() => t.reads.length === 1);
    let stopped = false;
    const stopping = t.w.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    answer.resolve({ status: 'cancel_requested' });
    await stopping;
    expect(t.w.signal.aborted).toBe(false);
    expect(t.logger.lines).toEqual([]);
  });
});

describe('LeaseKeeper, stopped during a renewal', () => {
  it('ignores the answer (the last write may have released the lease on purpose)', async () => {
    const clock = new FakeClock();
    const logger = memoryLogger();
    const answer = deferred<boolean>();
    let renewals = 0;
    const lease = new LeaseKeeper({
      ledger: {
        renew: () => {
          renewals += 1;
          return answer.promise;
        },
      },
      clock,
      logger,
      operationId: 'op_1',
      workerId: 'w',
      leaseMs: 3_000,
    });
    lease.start();
    clock.advance(1_000);
    await eventually(() => renewals === 1);
    const stopping = lease.stop();
    answer.resolve(false);
    await stopping;
    expect(lease.signal.aborted).toBe(false);
    expect(logger.events('op.lease_lost')).toEqual([]);
  });
});
