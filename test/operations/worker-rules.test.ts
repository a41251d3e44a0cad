import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import {
  Worker,
  type DispatchOutcome,
  type DurableHandler,
  type ReconcileOutcome,
  type RecoveryMode,
} from '../../packages/idem/src/operations/index.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  accept,
  harness,
  LEASE_MS,
  memoryLogger,
  OPERATION,
  openStore,
  tempDir,
  TEST_POLICY,
} from './operations-fixtures.js';
import { requestCancel } from '../../packages/idem/src/operations/ledger-transitions.js';

const args = { service: 'billing', version: '3.1.0' };

/** A handler whose every call is answered by the test, in order; `entered` resolves when one starts. */
function scripted(mode: RecoveryMode) {
  const dispatches: Array<() => Promise<DispatchOutcome>> = [];
  const reconciles: Array<() => Promise<ReconcileOutcome>> = [];
  const calls: string[] = [];
  const handler: DurableHandler = {
    mode,
    dispatch: (_op, context) => {
      calls.push(`dispatch ${context.providerKey}`);
      const next = dispatches.shift();
      if (next === undefined) throw new Error('unexpected dispatch');
      return next();
    },
    reconcile: (_op, context) => {
      calls.push(`reconcile ${context.providerKey}`);
      const next = reconciles.shift();
      if (next === undefined) throw new Error('unexpected reconcile');
      return next();
    },
    nextAction: (op) => `look for ${op.operationId}`,
  };
  return { handler, dispatches, reconciles, calls };
}

function gate() {
  let open!: () => void;
  let entered!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (entered = resolve));
  return { open, opened, reached, entered };
}

async function setup(mode: RecoveryMode) {
  const clock = new FakeClock();
  const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
  const script = scripted(mode);
  const logger = memoryLogger();
  const worker = new Worker({
    store,
    handlers: { [OPERATION]: script.handler },
    clock,
    logger,
    policy: TEST_POLICY,
    leaseMs: LEASE_MS,
    random: () => 0,
  });
  const op = await accept(store, clock, args);
  const get = async () => (await store.ledger.get(op.operationId)) as OperationRecord;
  return { clock, store, script, logger, worker, op, get };
}

const created = (id: string): DispatchOutcome => ({
  kind: 'created',
  resourceId: id,
  fields: { deployment_id: id },
});

describe('Worker rules with a scripted handler', () => {
  it('a cancel that arrives during a throttled attempt: cancelled (nothing was applied)', async () => {
    const t = await setup('key');
    const g = gate();
    t.script.dispatches.push(async () => {
      g.entered();
      await g.opened;
      return { kind: 'throttled', status: 503 };
    });
    const running = t.worker.runOnce();
    await g.reached;
    await requestCancel(t.store.ledger, t.op.operationId, t.clock.now());
    g.open();
    await running;
    expect(await t.get()).toMatchObject({ status: 'cancelled', dispatched: false, attemptCount: 1 });
  });

  it('a cancel that arrives during an ambiguous attempt (mode key): resends, then outcome_unknown', async () => {
    const t = await setup('key');
    const g = gate();
    t.script.dispatches.push(async () => {
      g.entered();
      await g.opened;
      return { kind: 'ambiguous', reason: 'timeout' };
    });
    // The resends after the cancel (same key) are refused: the first attempt's outcome stays open.
    t.script.dispatches.push(async () => ({ kind: 'throttled', status: 0 }));
    t.script.dispatches.push(async () => ({
      kind: 'rejected',
      code: 'forbidden',
      status: 403,
      reason: 'no',
    }));
    const running = t.worker.runOnce();
    await g.reached;
    await requestCancel(t.store.ledger, t.op.operationId, t.clock.now());
    g.open();
    await running;
    expect(await t.get()).toMatchObject({ status: 'cancel_requested', dispatched: true });
    while (await t.worker.runOnce());
    const done = await t.get();
    expect(done).toMatchObject({ status: 'outcome_unknown', dispatched: true, attemptCount: 3 });
    expect(done.error?.nextAction).toBe(`look for ${t.op.operationId}`);
    expect(t.script.calls).toHaveLength(3);
  });

  it('a success that arrives after a cancel request: succeeded', async () => {
    const t = await setup('none');
    const g = gate();
    t.script.dispatches.push(async () => {
      g.entered();
      await g.opened;
      return created('res_1');
    });
    const running = t.worker.runOnce();
    await g.reached;
    await requestCancel(t.store.ledger, t.op.operationId, t.clock.now());
    g.open();
    await running;
    expect(await t.get()).toMatchObject({ status: 'succeeded', resourceId: 'res_1' });
  });

  it('a handler that throws counts as ambiguous (the request may have gone out)', async () => {
    const t = await setup('key');
    t.script.dispatches.push(() => Promise.reject(new Error('bug')));
    t.script.dispatches.push(async () => created('res_2'));
    expect(await t.worker.runOnce()).toBe(true);
    expect(await t.get()).toMatchObject({ status: 'running', dispatched: true });
    expect(t.logger.events('op.handler_error')).toHaveLength(1);
    expect(await t.worker.runOnce()).toBe(true);
    expect(await t.get()).toMatchObject({ status: 'succeeded', resourceId: 'res_2' });
    expect(t.script.calls).toEqual([
      `dispatch idem-${t.op.operationId}`,
      `dispatch idem-${t.op.operationId}`,
    ]);
  });

  it('mode reference: a failed lookup keeps it dispatched and retries the lookup, not the request', async () => {
    const t = await setup('reference');
    t.script.dispatches.push(async () => ({ kind: 'ambiguous', reason: 'timeout' }));
    t.script.reconciles.push(async () => ({ kind: 'ambiguous', reason: 'lookup timeout' }));
    t.script.reconciles.push(async () => created('res_3') as ReconcileOutcome);
    expect(await t.worker.runOnce()).toBe(true);
    expect(await t.get()).toMatchObject({ status: 'running', dispatched: true, attemptCount: 1 });
    expect(await t.worker.runOnce()).toBe(true);
    expect(await t.get()).toMatchObject({ status: 'succeeded', resourceId: 'res_3', attemptCount: 1 });
    const key = `idem-${t.op.operationId}`;
    expect(t.script.calls).toEqual([`dispatch ${key}`, `reconcile ${key}`, `reconcile ${key}`]);
  });

  it('mode reference: absent right after an ambiguous attempt is not proof; absent after the landing window is', async () => {
    const t = await setup('reference');
    t.script.dispatches.push(async () => ({ kind: 'ambiguous', reason: 'timeout' }));
    t.script.reconciles.push(async () => ({ kind: 'absent' }));
    t.script.reconciles.push(async () => ({ kind: 'absent' }));
    t.script.dispatches.push(async () => created('res_4'));
    expect(await t.worker.runOnce()).toBe(true);
    expect(await t.get()).toMatchObject({ status: 'running', dispatched: true });
    // The request may still land until its start + attempt timeout + landingMs (default: the timeout).
    t.clock.advance(2 * TEST_POLICY.attemptTimeoutMs - 1);
    expect(await t.worker.runOnce()).toBe(false);
    t.clock.advance(1);
    // Reconciles: absent, now established; the same run dispatches again.
    expect(await t.worker.runOnce()).toBe(true);
    expect(await t.get()).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    expect(t.script.calls.map((call) => call.split(' ')[0])).toEqual([
      'dispatch',
      'reconcile',
      'reconcile',
      'dispatch',
    ]);
  });

  it('a reconcile the handler cannot do ends outcome_unknown', async () => {
    const t = await setup('reference');
    t.script.dispatches.push(async () => ({ kind: 'ambiguous', reason: 'timeout' }));
    t.script.reconciles.push(async () => ({ kind: 'unsupported' }));
    expect(await t.worker.runOnce()).toBe(true);
    expect((await t.get()).status).toBe('outcome_unknown');
  });

  it('an operation with no handler is left alone (leased, not failed) and logged', async () => {
    const t = await setup('key');
    const other = await accept(t.store, t.clock, args, { operation: 'unknown_op' });
    t.script.dispatches.push(async () => created('res_5'));
    while (await t.worker.runOnce());
    expect((await t.store.ledger.get(other.operationId))?.status).toBe('accepted');
    expect(t.logger.events('op.no_handler')).toEqual([expect.objectContaining({ tool: 'unknown_op@v1' })]);
    expect((await t.get()).status).toBe('succeeded');
  });
});

describe('Worker logs', () => {
  it('op.attempt and op.final carry ids, tool, outcome and duration; never arguments or bodies', async () => {
    const h = await harness('key', new FakeClock());
    const op = await h.accept({ service: 'secret-service-name', version: '7.7.7' });
    const worker = h.worker({ workerId: 'w-1' });
    await worker.runOnce();
    const [attempt] = h.logger.events('op.attempt');
    expect(attempt).toEqual({
      operation_id: op.operationId,
      worker_id: 'w-1',
      tool: 'deploy@v1',
      attempt_id: expect.stringMatching(/^att_/),
      attempt: 1,
      outcome: 'created',
      detail: 'created',
      duration_ms: expect.any(Number),
    });
    expect(h.logger.events('op.final')).toEqual([
      {
        operation_id: op.operationId,
        worker_id: 'w-1',
        tool: 'deploy@v1',
        outcome: 'succeeded',
        attempts: 1,
        error_code: undefined,
      },
    ]);
    const text = JSON.stringify(h.logger.lines);
    for (const secret of ['secret-service-name', '7.7.7', 'dep_']) expect(text).not.toContain(secret);
  });
});

describe('Worker loop', () => {
  it('start processes what becomes due; stop ends the wait at once', async () => {
    const h = await harness('none', new FakeClock());
    const worker = h.worker({ pollIntervalMs: 1_000_000 });
    const op = await h.accept(args);
    worker.start();
    worker.start(); // idempotent
    const until = Date.now() + 5_000;
    while ((await h.get(op.operationId)).status !== 'succeeded' && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await h.get(op.operationId)).status).toBe('succeeded');
    await worker.stop(); // the loop sleeps on the fake clock for 1000 s: stop must not wait for that
    await worker.stop();
  });

  it('never throws out of the loop: a failing store is logged and polled again', async () => {
    const clock = new FakeClock();
    let claims = 0;
    const failing = {
      ledger: {
        claim: async () => {
          claims += 1;
          throw new Error('disk on fire');
        },
      },
    } as unknown as IdemStore<unknown>;
    const logger = memoryLogger();
    const worker = new Worker({ store: failing, handlers: {}, clock, logger, pollIntervalMs: 100 });
    worker.start();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(claims).toBe(1);
    clock.advance(100);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(claims).toBe(2);
    await worker.stop();
    expect(logger.events('worker.error')).toEqual([{ message: 'disk on fire' }, { message: 'disk on fire' }]);
  });
});
