import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { creates, harness, recordRequests } from './operations-fixtures.js';

// Issue 38, item 6: under kill -9 of the worker, a create_payment retry answered `internal` once.
// The cause: an operation whose deadline passed while no worker ran (a killed worker's lease, a
// worker restarting) is failed by the next worker with the code `internal` and the message
// "deadline exhausted after 0 attempts: never attempted", and every retry of its key answers that.
// Nothing crashed; op.final names the stop, so that an `internal` answer is never without a line
// that says which path produced it.

describe('op.final names the worker stop behind a failed operation', () => {
  it('deadline passed before any attempt: error_code internal, stop_reason deadline_exhausted, nothing sent', async () => {
    const clock = new FakeClock();
    const h = await harness('key', clock);
    const sent = recordRequests();
    const op = await h.accept({ service: 'billing', version: '1.4.2' }, { deadlineMs: 1_000 });
    clock.advance(5_000);
    expect(await h.worker({ workerId: 'w-late' }).runOnce()).toBe(true);
    expect((await h.get(op.operationId)).error).toMatchObject({
      code: 'internal',
      message: 'deadline exhausted after 0 attempts: never attempted',
    });
    expect(creates(sent)).toHaveLength(0);
    expect(h.logger.events('op.final')).toEqual([
      {
        operation_id: op.operationId,
        worker_id: 'w-late',
        tool: 'deploy@v1',
        outcome: 'failed',
        attempts: 0,
        error_code: 'internal',
        stop_reason: 'deadline_exhausted',
      },
    ]);
    // The name, never the message (which may quote an attempt's detail).
    expect(JSON.stringify(h.logger.lines)).not.toContain('never attempted');
  });
});
