import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { RetryPolicy } from '../../packages/idem/src/core/retry-policy.js';
import {
  Worker,
  type DispatchOutcome,
  type DurableHandler,
} from '../../packages/idem/src/operations/index.js';
import { deploymentHandler } from '../../packages/idem-cli/src/server/deployment-handler.js';
import { startProvider, type RunningProvider } from '../../packages/idem-cli/src/provider/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';
import {
  accept,
  eventually,
  LEASE_MS,
  listDeployments,
  memoryLogger,
  OPERATION,
  openEngineStore,
  openStore,
  refusedUrl,
  tempDir,
  TEST_POLICY,
  type Engine,
} from './operations-fixtures.js';

// Issue 22, point 5: a provider that restarts within a second must not fail operations for good.
// A refused connection sends nothing: it is retried with backoff until the deadline, and only the
// attempts that may have reached the provider count against maxAttempts.

const args = { service: 'billing', version: '5.0.0' };
const engines: Engine[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];

/** Real time: a 1 s attempt timeout, 3 attempts, backoff from 200 ms to 1 s. */
const POLICY: RetryPolicy = {
  totalMs: 10_000,
  attemptTimeoutMs: 1_000,
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 1_000,
};

const FINAL = ['succeeded', 'failed', 'outcome_unknown', 'cancelled'];

describe.each(engines)('Worker: a provider that is down for a while (%s)', (engine) => {
  async function setup(deadlineMs: number) {
    const dir = tempDir();
    const store = await openEngineStore(engine, join(dir, 'idem.sqlite'), systemClock);
    // A port nothing listens on; the provider is started on it later.
    const url = await refusedUrl();
    const handler = deploymentHandler({
      baseUrl: url,
      mode: 'key',
    });
    const logger = memoryLogger();
    const worker = new Worker({
      store,
      handlers: { [OPERATION]: handler },
      logger,
      policy: POLICY,
      leaseMs: LEASE_MS,
      pollIntervalMs: 20,
      random: () => 0.5,
    });
    const op = await accept(store, systemClock, args, { deadlineMs });
    const settled = async (timeoutMs: number): Promise<OperationRecord> => {
      let record: OperationRecord | undefined;
      await eventually(async () => {
        record = await store.ledger.get(op.operationId);
        return FINAL.includes(record?.status ?? '');
      }, timeoutMs);
      return record as OperationRecord;
    };
    return { dir, store, url, worker, op, settled, logger };
  }

  it('down for 1.5 s, then up on the same port: succeeded, exactly one deployment', async () => {
    const t = await setup(10_000);
    let provider: RunningProvider | undefined;
    const started = Date.now();
    const late = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      provider = await startProvider({
        mode: 'key',
        port: Number(new URL(t.url).port),
        dbPath: join(t.dir, 'provider.sqlite'),
      });
    })();
    t.worker.start();
    try {
      const done = await t.settled(15_000);
      await late;
      expect(done).toMatchObject({ status: 'succeeded', dispatched: false });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
      expect(await listDeployments(t.url)).toHaveLength(1);
      const attempts = await t.store.ledger.attempts(t.op.operationId);
      // More attempts than the cap of 3, all but the last refused before sending anything.
      expect(attempts.length).toBeGreaterThan(POLICY.maxAttempts);
      expect(attempts.map((a) => a.outcome)).toEqual([
        ...attempts.slice(0, -1).map(() => 'not_sent'),
        'succeeded',
      ]);
      expect(attempts[0]?.detail).toBe('connection refused');
    } finally {
      await t.worker.stop();
      await late;
      await provider?.close();
    }
  });

  it('never up: failed by its deadline, not after a handful of ms, saying nothing was sent', async () => {
    const t = await setup(3_000);
    const started = Date.now();
    t.worker.start();
    try {
      const done = await t.settled(10_000);
      const elapsed = Date.now() - started;
      // It stops after the last try, not before: a backoff drawn beyond it is shortened to end
      // there, which is minAttemptMs (100) + the poll interval (20) before the deadline, and the
      // last try comes less than baseDelayMs (200) before that (tries are never closer).
      expect(elapsed).toBeGreaterThanOrEqual(3_000 - 100 - 20 - 200);
      expect(elapsed).toBeLessThan(3_000 + 2_000);
      expect(done).toMatchObject({ status: 'failed', dispatched: false, error: { code: 'internal' } });
      expect(done.attemptCount).toBeGreaterThan(POLICY.maxAttempts);
      expect(done.error?.message).toMatch(
        /^deadline exhausted after \d+ attempts, none of which reached the provider \(nothing was done\): connection refused$/,
      );
      const attempts = await t.store.ledger.attempts(t.op.operationId);
      expect(new Set(attempts.map((a) => a.outcome))).toEqual(new Set(['not_sent']));
      // Backoff, not a spin: never sooner than the base delay after the previous refusal.
      const starts = attempts.map((a) => a.startedAt).sort((a, b) => a - b);
      for (let i = 1; i < starts.length; i += 1)
        expect((starts[i] as number) - (starts[i - 1] as number)).toBeGreaterThanOrEqual(
          POLICY.baseDelayMs - 5,
        );
    } finally {
      await t.worker.stop();
    }
  });
});

describe('Worker: the attempt cap counts only attempts that may have reached the provider', () => {
  it('refused, 503, refused, 503, 503: attempts exhausted after 5 attempts, 3 of which reached it', async () => {
    const clock = new FakeClock();
    const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
    const refused: DispatchOutcome = { kind: 'throttled', status: 0, unsent: true };
    const busy: DispatchOutcome = { kind: 'throttled', status: 503 };
    const script = [refused, busy, refused, busy, busy];
    const handler: DurableHandler = {
      mode: 'key',
      dispatch: () => {
        const next = script.shift();
        if (next === undefined) throw new Error('unexpected dispatch');
        return Promise.resolve(next);
      },
      reconcile: () => Promise.resolve({ kind: 'unsupported' }),
      nextAction: () => 'none',
    };
    const worker = new Worker({
      store,
      handlers: { [OPERATION]: handler },
      clock,
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
      random: () => 0,
    });
    const op = await accept(store, clock, args);
    for (let i = 0; i < 20; i += 1) {
      if (!(await worker.runOnce())) clock.advance(TEST_POLICY.baseDelayMs);
      const record = await store.ledger.get(op.operationId);
      if (FINAL.includes(record?.status ?? '')) break;
    }
    const done = await store.ledger.get(op.operationId);
    expect(script).toEqual([]);
    expect(done).toMatchObject({ status: 'failed', attemptCount: 5, error: { code: 'internal' } });
    expect(done?.error?.message).toBe(
      'attempts exhausted after 5 attempts, 3 of which reached the provider: throttled (HTTP 503)',
    );
    const outcomes = (await store.ledger.attempts(op.operationId)).map((a) => a.outcome);
    expect(outcomes).toEqual([
      'not_sent',
      'retryable_failure',
      'not_sent',
      'retryable_failure',
      'retryable_failure',
    ]);
  });
});
