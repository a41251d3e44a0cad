import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import {
  Worker,
  type DispatchOutcome,
  type DurableHandler,
  type HandlerCallContext,
  type UnknownOutcomeContext,
} from '../../packages/idem/src/operations/index.js';
import { deploymentHandler } from '../../packages/idem-cli/src/server/deployment-handler.js';
import { startProvider } from '../../packages/idem-cli/src/provider/index.js';
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
  tempDir,
  TEST_POLICY,
  type Engine,
} from './operations-fixtures.js';

// Issue 22, point 4: a provider that forgets idempotency keys (here after 2 s) must not receive a
// resend after it may have forgotten the key: that resend would create a second deployment and
// report it as a plain success. The handler declares the retention; the worker stops at
// outcome_unknown instead, saying why.

const args = { service: 'billing', version: '6.0.0' };
const engines: Engine[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];
const FINAL = ['succeeded', 'failed', 'outcome_unknown', 'cancelled'];

describe.each(engines)('Worker: a provider that keeps keys for 2 s (%s)', (engine) => {
  it('reply dropped, then a 429 with Retry-After: 3: outcome_unknown, one deployment, no late resend', async () => {
    const dir = tempDir();
    const store = await openEngineStore(engine, join(dir, 'idem.sqlite'), systemClock);
    const provider = await startProvider({
      mode: 'key',
      port: 0,
      dbPath: join(dir, 'provider.sqlite'),
      keyRetentionMs: 2_000,
    });
    const handler = deploymentHandler({
      baseUrl: provider.url,
      mode: 'key',
      providerKeyRetentionMs: 2_000,
    });
    const worker = new Worker({
      store,
      handlers: { [OPERATION]: handler },
      logger: memoryLogger(),
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
      pollIntervalMs: 20,
      random: () => 0,
    });
    provider.faults.arm({ kind: 'drop_response', route: 'create' });
    // 2 s of key retention leave the first attempt and the resend time to run on a loaded machine.
    provider.faults.arm({ kind: 'status', status: 429, route: 'create', retryAfterSeconds: 3 });
    const op = await accept(store, systemClock, args);
    worker.start();
    try {
      let done: OperationRecord | undefined;
      await eventually(async () => {
        done = await store.ledger.get(op.operationId);
        return FINAL.includes(done?.status ?? '');
      }, 10_000);
      // Whatever a late resend would have done, it has had the time to do it.
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      expect(await listDeployments(provider.url)).toHaveLength(1);
      expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 2 });
      expect(done?.error?.message).toMatch(
        /provider keeps an idempotency key for 2000 ms.*none was sent: the provider may have forgotten the key.*last attempt: throttled \(HTTP 429\), retry after 3000 ms$/,
      );
      expect(done?.error?.nextAction).toMatch(
        /^No resend was made: the deployment provider keeps an Idempotency-Key for 2000 ms and may have forgotten this one, so a resend could apply it again\. Check the deployment provider for a deployment of service "billing" at version "6\.0\.0" with Idempotency-Key idem-op_/,
      );
      expect((await store.ledger.attempts(op.operationId)).map((a) => a.outcome)).toEqual([
        'ambiguous',
        'retryable_failure',
      ]);
    } finally {
      await worker.stop();
      await provider.close();
    }
  });
});

describe('Worker: keyed resends stay inside the provider key retention (scripted, fake clock)', () => {
  function setup(retentionMs: number, random: () => number = () => 0) {
    const clock = new FakeClock();
    const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
    const script: Array<() => DispatchOutcome> = [];
    const timeouts: number[] = [];
    const unknownContexts: UnknownOutcomeContext[] = [];
    const handler: DurableHandler = {
      mode: 'key',
      providerKeyRetentionMs: retentionMs,
      dispatch: (_op: OperationRecord, context: HandlerCallContext) => {
        timeouts.push(context.timeoutMs);
        const next = script.shift();
        if (next === undefined) throw new Error('unexpected dispatch');
        return Promise.resolve(next());
      },
      reconcile: () => Promise.resolve({ kind: 'unsupported' }),
      nextAction: (_op, context) => {
        unknownContexts.push(context);
        return 'check the provider';
      },
    };
    const worker = new Worker({
      store,
      handlers: { [OPERATION]: handler },
      clock,
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
      random,
    });
    return { clock, store, script, timeouts, unknownContexts, worker };
  }

  it('a resend gets at most what is left of the window; none is sent once less than an attempt is left', async () => {
    const t = setup(1_000);
    const op = await accept(t.store, t.clock, args);
    const ambiguous = (): DispatchOutcome => ({ kind: 'ambiguous', reason: 'timeout' });
    t.script.push(ambiguous, ambiguous);
    expect(await t.worker.runOnce()).toBe(true); // attempt 1 at t=0: ambiguous, resend due at once
    t.clock.advance(800);
    expect(await t.worker.runOnce()).toBe(true); // attempt 2 at t=800: 200 ms of the window left
    t.clock.advance(150);
    expect(await t.worker.runOnce()).toBe(true); // t=950: 50 ms left, less than an attempt (100 ms)
    expect(t.timeouts).toEqual([TEST_POLICY.attemptTimeoutMs, 200]);
    const done = await t.store.ledger.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 2 });
    expect(done?.error?.message).toContain('the provider may have forgotten the key');
    expect(t.unknownContexts).toEqual([expect.objectContaining({ keyRetentionPassedMs: 1_000 })]);
  });

  it('a backoff that would end beyond the window is shortened to fit it', async () => {
    const t = setup(1_000, () => 0.999);
    const op = await accept(t.store, t.clock, args);
    // Attempt 1 runs 850 ms and ends ambiguous: 150 ms of the window left, the backoff drew 199 ms.
    t.script.push(() => {
      t.clock.advance(850);
      return { kind: 'ambiguous', reason: 'timeout' };
    });
    t.script.push(() => ({
      kind: 'created',
      resourceId: 'dep_1',
      fields: { deployment_id: 'dep_1' },
      replayed: true,
    }));
    expect(await t.worker.runOnce()).toBe(true);
    // Shortened to 50 ms: the resend starts with 100 ms (one least attempt) of the window left.
    t.clock.advance(49);
    expect(await t.worker.runOnce()).toBe(false);
    t.clock.advance(1);
    expect(await t.worker.runOnce()).toBe(true);
    expect(t.timeouts).toEqual([TEST_POLICY.attemptTimeoutMs, 100]);
    expect(await t.store.ledger.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: 'dep_1',
    });
  });

  // Issue 38: the mutation probe found that nothing failed when this rule was dropped (the real
  // provider test above could not tell: a resend shortened into the window was stopped by the
  // window check at pickup all the same). Here the clock is exact.
  it('a Retry-After that reaches past the window stops the resends at once: outcome_unknown, none scheduled', async () => {
    const t = setup(1_000);
    const logger = memoryLogger();
    const worker = new Worker({
      store: t.store,
      handlers: { [OPERATION]: scripted(t) },
      clock: t.clock,
      logger,
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
      random: () => 0,
    });
    const op = await accept(t.store, t.clock, args);
    t.script.push(() => ({ kind: 'ambiguous', reason: 'timeout' }));
    // 2 s: fits the 30 s budget, not the 1 s the provider keeps the key.
    t.script.push(() => ({ kind: 'throttled', status: 429, retryAfterMs: 2_000 }));
    expect(await worker.runOnce()).toBe(true); // ambiguous: a keyed resend, due at once
    expect(await worker.runOnce()).toBe(true); // throttled: the resend after 2 s would be too late
    const done = await t.store.ledger.get(op.operationId);
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 2 });
    expect(done?.error?.message).toMatch(/none was sent: the provider may have forgotten the key/);
    expect(done?.error?.message).toMatch(/last attempt: throttled \(HTTP 429\), retry after 2000 ms$/);
    // One retry was planned (the resend after the ambiguity), none after the Retry-After.
    expect(logger.events('op.retry_scheduled')).toHaveLength(1);
    t.clock.advance(2_000);
    expect(await worker.runOnce()).toBe(false);
    expect(t.script).toHaveLength(0);
  });

  it('a Retry-After that ends inside the window is waited out, then the resend goes', async () => {
    const t = setup(1_000);
    const worker = new Worker({
      store: t.store,
      handlers: { [OPERATION]: scripted(t) },
      clock: t.clock,
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
      random: () => 0,
    });
    const op = await accept(t.store, t.clock, args);
    t.script.push(() => ({ kind: 'ambiguous', reason: 'timeout' }));
    t.script.push(() => ({ kind: 'throttled', status: 429, retryAfterMs: 800 }));
    t.script.push(() => ({
      kind: 'created',
      resourceId: 'dep_3',
      fields: { deployment_id: 'dep_3' },
      replayed: true,
    }));
    expect(await worker.runOnce()).toBe(true);
    expect(await worker.runOnce()).toBe(true);
    t.clock.advance(799);
    expect(await worker.runOnce()).toBe(false); // not before the Retry-After
    t.clock.advance(1);
    expect(await worker.runOnce()).toBe(true);
    // The resend's timeout: what is left of the window (1,000 - 800 ms).
    expect(t.timeouts).toEqual([TEST_POLICY.attemptTimeoutMs, TEST_POLICY.attemptTimeoutMs, 200]);
    expect(await t.store.ledger.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: 'dep_3',
    });
  });

  it('without a declared retention, a resend is sent whenever the budget allows', async () => {
    const t = setup(1_000);
    const free = handlerWithoutRetention(t);
    const worker = new Worker({
      store: t.store,
      handlers: { [OPERATION]: free },
      clock: t.clock,
      policy: TEST_POLICY,
      leaseMs: LEASE_MS,
      random: () => 0,
    });
    const op = await accept(t.store, t.clock, args);
    t.script.push(() => ({ kind: 'ambiguous', reason: 'timeout' }));
    t.script.push(() => ({
      kind: 'created',
      resourceId: 'dep_2',
      fields: { deployment_id: 'dep_2' },
      replayed: true,
    }));
    expect(await worker.runOnce()).toBe(true);
    t.clock.advance(20_000);
    expect(await worker.runOnce()).toBe(true);
    expect(await t.store.ledger.get(op.operationId)).toMatchObject({
      status: 'succeeded',
      resourceId: 'dep_2',
    });
  });
});

/** The scripted handler of `t`, minus its key retention. */
function handlerWithoutRetention(t: { script: Array<() => DispatchOutcome> }): DurableHandler {
  return {
    mode: 'key',
    dispatch: () => {
      const next = t.script.shift();
      if (next === undefined) throw new Error('unexpected dispatch');
      return Promise.resolve(next());
    },
    reconcile: () => Promise.resolve({ kind: 'unsupported' }),
    nextAction: () => 'check the provider',
  };
}

/** The scripted handler of `t`, with its key retention, recording each dispatch's timeout. */
function scripted(t: { script: Array<() => DispatchOutcome>; timeouts: number[] }): DurableHandler {
  return {
    ...handlerWithoutRetention(t),
    providerKeyRetentionMs: 1_000,
    dispatch: (_op: OperationRecord, context: HandlerCallContext) => {
      t.timeouts.push(context.timeoutMs);
      const next = t.script.shift();
      if (next === undefined) throw new Error('unexpected dispatch');
      return Promise.resolve(next());
    },
  };
}
