import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { MIN_ATTEMPT_MS, type RetryPolicy } from '../../packages/idem/src/core/retry-policy.js';
import {
  Worker,
  type DispatchOutcome,
  type DurableHandler,
  type HandlerCallContext,
} from '../../packages/idem/src/operations/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { accept, LEASE_MS, memoryLogger, OPERATION, openStore, tempDir } from './operations-fixtures.js';

// Issue 38, point 3: a provider that refuses connections and is back before the deadline loses
// nothing. Scripted on a fake clock: the handler refuses every connection until `backAt` (ms after
// acceptance), then creates. Each retry is picked up `lagMs` after it is due, as a worker does
// that polls every `pollIntervalMs` (or is busy with other operations).

const args = { service: 'billing', version: '7.0.0' };
const POLL_MS = 200;

interface Dispatch {
  /** ms after acceptance. */
  readonly at: number;
  readonly timeoutMs: number;
}

async function run(options: {
  policy?: Partial<RetryPolicy>;
  backAt: number;
  random: () => number;
  lagMs: number;
}): Promise<{ final: OperationRecord; dispatches: Dispatch[]; delays: number[] }> {
  const clock = new FakeClock();
  const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
  const logger = memoryLogger();
  const dispatches: Dispatch[] = [];
  let createdAt = 0;
  const handler: DurableHandler = {
    mode: 'key',
    dispatch: (_op: OperationRecord, context: HandlerCallContext): Promise<DispatchOutcome> => {
      const at = clock.now() - createdAt;
      dispatches.push({ at, timeoutMs: context.timeoutMs });
      return Promise.resolve(
        at < options.backAt
          ? { kind: 'throttled', status: 0, unsent: true }
          : { kind: 'created', resourceId: 'dep_1', fields: { deployment_id: 'dep_1' } },
      );
    },
    reconcile: () => Promise.resolve({ kind: 'unsupported' }),
    nextAction: () => 'check the provider',
  };
  const worker = new Worker({
    store,
    handlers: { [OPERATION]: handler },
    clock,
    logger,
    pollIntervalMs: POLL_MS,
    leaseMs: LEASE_MS,
    random: options.random,
    ...(options.policy === undefined ? {} : { policy: options.policy }),
  });
  const op = await accept(store, clock, args, { deadlineMs: options.policy?.totalMs ?? 30_000 });
  createdAt = op.createdAt;
  for (let step = 0; step < 1_000; step += 1) {
    expect(await worker.runOnce()).toBe(true);
    const record = await store.ledger.get(op.operationId);
    if (record === undefined) throw new Error('lost the operation');
    if (!['accepted', 'running'].includes(record.status)) {
      const delays = logger.events('op.retry_scheduled').map((fields) => fields.delay_ms as number);
      return { final: record, dispatches, delays };
    }
    const [scheduled] = logger.events('op.retry_scheduled').slice(-1);
    const delay = scheduled?.delay_ms as number;
    // Not due a moment before its time...
    if (delay > 0) {
      clock.advance(delay - 1);
      expect(await worker.runOnce()).toBe(false);
      clock.advance(1);
    }
    // ...and picked up late.
    clock.advance(options.lagMs);
  }
  throw new Error('the operation never settled');
}

describe('Worker: refused connections until the provider is back before the deadline', () => {
  it('the last try is made although the worker picks it up late (4 s deadline, back 400 ms before it)', async () => {
    // Tries at 0, 450, 1,099, 2,148 and 3,397 ms are refused; the last one is planned at
    // 4,000 - 100 (minAttemptMs) - 200 (the poll interval) = 3,700 ms and picked up 250 ms late,
    // 50 ms before the deadline: it is made, with a timeout of minAttemptMs, and succeeds.
    const { final, dispatches } = await run({
      policy: { totalMs: 4_000 },
      backAt: 3_600,
      random: () => 0.999,
      lagMs: 250,
    });
    expect(final).toMatchObject({ status: 'succeeded', resourceId: 'dep_1' });
    expect(dispatches.map((d) => d.at)).toEqual([0, 450, 1_099, 2_148, 3_397, 3_950]);
    expect(dispatches.at(-1)?.timeoutMs).toBe(MIN_ATTEMPT_MS);
  });

  it('refused for all of the 30 s default: retried 200 ms to 1 s apart, up to a last try 300 ms before the end', async () => {
    const { final, dispatches, delays } = await run({ backAt: Infinity, random: () => 0.999, lagMs: 0 });
    expect(final).toMatchObject({ status: 'failed', dispatched: false, error: { code: 'internal' } });
    expect(final.error?.message).toBe(
      `deadline exhausted after ${dispatches.length} attempts, none of which reached the provider (nothing was done): connection refused`,
    );
    // The ceiling stops at 1 s (maxRefusedDelayMs), however many refusals came before.
    expect(Math.max(...delays)).toBe(999);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(200);
    const last = dispatches.at(-1)?.at ?? 0;
    expect(last).toBeLessThanOrEqual(30_000 - 300);
    expect(last).toBeGreaterThan(30_000 - 300 - 200);
  });

  it('maxRefusedDelayMs bounds the wait between refused tries', async () => {
    const { delays } = await run({
      policy: { totalMs: 5_000, maxRefusedDelayMs: 400 },
      backAt: Infinity,
      random: () => 0.999,
      lagMs: 0,
    });
    expect(Math.max(...delays)).toBe(399);
  });

  // The promise in docs/external-effects.md: back at least minAttemptMs + the poll interval +
  // baseDelayMs (500 ms by default) before the deadline, with pickups at most a poll interval late.
  for (const draw of [0, 0.37, 0.999])
    for (const lagMs of [0, 120, POLL_MS])
      it(`back 500 ms before a 6 s deadline: succeeded (draw ${draw}, picked up ${lagMs} ms late)`, async () => {
        const { final, dispatches } = await run({
          policy: { totalMs: 6_000 },
          backAt: 5_500,
          random: () => draw,
          lagMs,
        });
        expect(final, JSON.stringify(dispatches)).toMatchObject({ status: 'succeeded' });
        const starts = dispatches.map((d) => d.at);
        for (let i = 1; i < starts.length; i += 1)
          expect((starts[i] as number) - (starts[i - 1] as number)).toBeGreaterThanOrEqual(200);
      });
});
