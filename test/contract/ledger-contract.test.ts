import { describe, expect, it, onTestFinished } from 'vitest';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { OperationState } from '../../packages/idem/src/core/operation-state.js';
import { DEFAULT_RETRY_POLICY } from '../../packages/idem/src/core/retry-policy.js';
import type { CallOutcome, Executor } from '../../packages/idem/src/executor/executor.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import {
  DAY,
  defined,
  Harness,
  HOUR,
  turn,
  YEAR,
  type ContractStore,
} from '../../packages/idem/src/testing/contract/harness.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import {
  callStart,
  DEPLOYMENT_ARGS,
  durableExecutor,
  startDeployment,
  startDurable,
  storeFactories,
  type TestStore,
} from '../helpers/store-fixtures.js';
import {
  requestCancel,
  resolve,
  startAttempt,
} from '../../packages/idem/src/operations/ledger-transitions.js';

/*
 * The executor's side of the durable ledger (Executor.start, and what a retry answers once a
 * worker, an operator or the sweep settled the record) over every store in storeFactories. The
 * ledger's own contract (claim, renew, attempts, transition, requestCancel, resolve, sweep,
 * queries) is the exported suite in src/testing/contract, run by port-contract.test.ts.
 */

type Success = Extract<CallOutcome, { ok: true }>;
type Failure = Extract<CallOutcome, { ok: false }>;

function succeeded(outcome: CallOutcome): Success {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.error.code}: ${outcome.error.message}`);
  return outcome;
}

function failed(outcome: CallOutcome): Failure {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.result)}`);
  return outcome;
}

/**
 * How long (real time) a store may take to reach the awaited point. Bounded by time, not by turns:
 * a turn is microseconds, a PostgreSQL round trip under CI load can be tens of milliseconds.
 */
const PATIENCE_MS = 20_000;

async function untilSleeping(clock: FakeClock): Promise<void> {
  const deadline = performance.now() + PATIENCE_MS;
  while (clock.pendingSleepers === 0) {
    if (performance.now() > deadline)
      throw new Error(`nothing started sleeping on the fake clock in ${PATIENCE_MS} ms`);
    await turn();
  }
}

/** Advances the fake clock in `stepMs` steps whenever something sleeps on it, until `promise` settles. */
async function drive<T>(clock: FakeClock, promise: Promise<T>, stepMs = 25): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  const deadline = performance.now() + PATIENCE_MS;
  while (!settled) {
    if (performance.now() > deadline)
      throw new Error(`the promise did not settle in ${PATIENCE_MS} ms of driving the clock`);
    if (clock.pendingSleepers > 0) clock.advance(stepMs);
    await turn();
  }
  return watched;
}

for (const factory of storeFactories) {
  describe(`ledger contract: ${factory.name}`, () => {
    interface Ledger {
      readonly t: TestStore;
      readonly store: IdemStore<unknown>;
      readonly clock: FakeClock;
      /** Answers a retry of an unfinished operation after `inFlightWaitMs` (default 0: at once). */
      readonly executor: Executor<unknown>;
      /** The worker's moves on the same store; its `accept` goes through `executor`. */
      readonly h: Harness<unknown>;
    }

    async function open(inFlightWaitMs = 0): Promise<Ledger> {
      const clock = new FakeClock();
      const t = await factory.create({ clock });
      onTestFinished(() => t.close());
      const executor = durableExecutor(t.store, { clock, inFlightWaitMs });
      const contract: ContractStore<unknown> = {
        store: t.store,
        writeRow: () => {
          throw new Error('the executor tests write no application rows through the harness');
        },
        countRows: () => t.countNotes(),
        close: () => t.close(),
      };
      const h = Harness.over(contract, clock, (key, args) => startDurable(executor, { key, args }));
      return { t, store: t.store, clock, executor, h };
    }

    describe('Executor.start', () => {
      it('accepts once and stores an accepted durable record with its args and deadline', async () => {
        const l = await open();
        const now = l.clock.now();
        const outcome = succeeded(await callStart(l.executor, { key: 'deploy-1' }));

        expect(outcome.replayed).toBe(false);
        expect(outcome.operationId).toMatch(/^op_[0-9a-f]{32}$/);
        expect(outcome.result).toEqual({ status: 'accepted', operation_id: outcome.operationId });
        expect(outcome.nextStep).toBe('follow_operation');

        const record = await l.h.get(outcome.operationId);
        expect(record).toMatchObject({
          operationId: outcome.operationId,
          identity: {
            principal: 'alice',
            workspace: 'ws-1',
            operation: startDeployment.name,
            version: startDeployment.version,
            key: 'deploy-1',
          },
          kind: 'durable',
          status: 'accepted',
          args: DEPLOYMENT_ARGS,
          createdAt: now,
          updatedAt: now,
          deadlineAt: now + DEFAULT_RETRY_POLICY.totalMs,
          attemptCount: 0,
          dispatched: false,
        });
        expect(record.fingerprint).toMatch(/^[0-9a-f]{64}$/);
        expect(record.expiresAt).toBeUndefined();
        expect(record.result).toBeUndefined();
        expect(record.leaseOwner).toBeUndefined();
        expect(record.leaseExpiresAt).toBeUndefined();
        expect(await l.store.ledger.attempts(outcome.operationId)).toEqual([]);
      });

      it("takes the deadline from the operation's own policy.totalMs", async () => {
        const l = await open();
        const now = l.clock.now();
        const op = await startDurable(
          l.executor,
          { key: 'deploy-1' },
          { ...startDeployment, policy: { ...DEFAULT_RETRY_POLICY, totalMs: 10 * 60_000 } },
        );
        expect(op.deadlineAt).toBe(now + 10 * 60_000);
      });

      it('answers a retry of an unfinished operation with in_progress and its operation id', async () => {
        const l = await open();
        const first = succeeded(await callStart(l.executor, { key: 'deploy-1' }));
        const id = first.operationId;

        const checkRetry = async (state: OperationState) => {
          expect((await l.h.get(id)).status).toBe(state);
          const retry = failed(await callStart(l.executor, { key: 'deploy-1' }));
          expect(retry.status, state).toBe('running');
          expect(retry.error.code, state).toBe('in_progress');
          expect(retry.error.retryable, state).toBe(true);
          expect(retry.error.operationId, state).toBe(id);
          expect(retry.error.nextStep, state).toBe('follow_operation');
          expect(retry.error.nextAction, state).toBeUndefined();
        };

        await checkRetry('accepted');
        await l.h.claimOp(id, 'w1');
        await startAttempt(l.store.ledger, id, {
          workerId: 'w1',
          attemptId: 'att-1',
          now: l.clock.now(),
          from: ['accepted'],
        });
        await checkRetry('running');
        await requestCancel(l.store.ledger, id, l.clock.now());
        await checkRetry('cancel_requested');
        expect(await l.store.ledger.list()).toHaveLength(1);
      });

      it('rejects the same key with other args as payload_conflict and changes nothing', async () => {
        const l = await open();
        const op = await l.h.accept('deploy-1', { service: 'api', version: '1.0.0' });
        const conflict = failed(
          await callStart(l.executor, { key: 'deploy-1', args: { service: 'api', version: '2.0.0' } }),
        );
        expect(conflict.error.code).toBe('payload_conflict');
        expect(conflict.error.retryable).toBe(false);
        expect(await l.h.get(op.operationId)).toEqual(op);
        expect(await l.store.ledger.list()).toEqual([op]);
      });

      it('waits within the in-flight bound and returns the result when the worker finishes meanwhile', async () => {
        const l = await open(2000);
        const op = await l.h.running();
        const retry = callStart(l.executor, { key: 'deploy-1' });
        let answered = false;
        void retry.then(() => (answered = true));

        await untilSleeping(l.clock);
        l.clock.advance(25);
        await untilSleeping(l.clock);
        expect(answered).toBe(false);

        const result = { status: 'succeeded', operation_id: op.operationId, resource_id: 'dep-1' };
        defined(
          await l.h.transition(op, 'w1', 'succeeded', {
            resourceId: 'dep-1',
            result,
            expiresAt: l.clock.now() + DAY,
            dispatched: false,
            releaseLease: true,
          }),
          'transition to succeeded',
        );
        const outcome = succeeded(await drive(l.clock, retry));
        expect(outcome.replayed).toBe(true);
        expect(outcome.operationId).toBe(op.operationId);
        expect(outcome.result).toEqual(result);
      });

      it('reports in_progress once the in-flight bound has passed', async () => {
        const l = await open(200);
        const op = await l.h.accept();
        const started = l.clock.monotonic();
        const outcome = failed(await drive(l.clock, callStart(l.executor, { key: 'deploy-1' })));
        expect(outcome.error.code).toBe('in_progress');
        expect(outcome.error.operationId).toBe(op.operationId);
        expect(l.clock.monotonic() - started).toBeGreaterThanOrEqual(200);
        expect(l.clock.monotonic() - started).toBeLessThan(250);
      });

      it('replays the final state to a retry: the stored result, or the stored failure', async () => {
        const l = await open();
        const done = await l.h.finalOp('succeeded', 'deploy-ok');
        const replay = succeeded(await callStart(l.executor, { key: 'deploy-ok' }));
        expect(replay.replayed).toBe(true);
        expect(replay.operationId).toBe(done.operationId);
        expect(replay.result).toEqual(done.result);

        const refused = await l.h.finalOp('failed', 'deploy-bad');
        const failure = failed(await callStart(l.executor, { key: 'deploy-bad' }));
        expect(failure.status).toBe('failed');
        expect(failure.error.code).toBe('invalid_argument');
        expect(failure.error.message).toBe(refused.error?.message);
        expect(failure.error.operationId).toBe(refused.operationId);
        expect(await l.store.ledger.list()).toHaveLength(2);
      });
    });

    describe('Executor.start after an operator or the sweep settled the record', () => {
      it('replays what an operator settled: a resolved outcome_unknown, a corrected failed or cancelled', async () => {
        const l = await open();
        const unknown = await l.h.finalOp('outcome_unknown');
        l.clock.advance(HOUR);
        const settle = (op: OperationRecord, correct: boolean) =>
          resolve(l.store.ledger, op.operationId, {
            to: 'succeeded',
            ...(correct ? { correct, reason: 'the provider lists dep-found with our key' } : {}),
            by: 'oncall@example.com',
            now: l.clock.now(),
            resourceId: 'dep-found',
            fields: { deployment_id: 'dep-found', service: 'api', version: '1.4.2' },
            expiresAt: l.clock.now() + DAY,
          });

        const resolved = defined(await settle(unknown, false), 'resolve');
        const replay = succeeded(await callStart(l.executor, { key: 'deploy-outcome_unknown' }));
        expect(replay.replayed).toBe(true);
        expect(replay.result.resource_id).toBe('dep-found');
        expect(replay.result).toEqual(resolved.result);

        for (const state of ['failed', 'cancelled'] as const) {
          const corrected = defined(await settle(await l.h.finalOp(state), true), `a correction of ${state}`);
          const again = succeeded(await callStart(l.executor, { key: `deploy-${state}` }));
          expect(again.replayed, state).toBe(true);
          expect(again.result, state).toEqual(corrected.result);
        }
      });

      it('answers key_expired once a sweep tombstoned the expired record; unfinished ones never leave a tombstone row', async () => {
        const l = await open();
        await l.h.finalOp('succeeded'); // expiresAt = now + DAY
        await l.h.finalOp('outcome_unknown');
        await l.h.running('deploy-running');
        const cancelling = await l.h.accept('deploy-cancelling');
        await requestCancel(l.store.ledger, cancelling.operationId, l.clock.now());
        await l.h.accept('deploy-accepted');
        const sweep = () =>
          l.store.housekeeping.sweep({ now: l.clock.now(), tombstoneTtlMs: 20 * YEAR, batchSize: 10 });

        l.clock.advance(DAY);
        expect(await sweep()).toMatchObject({ tombstoned: 1, tombstonesDeleted: 0 });
        expect(await l.t.countTombstones()).toBe(1);
        expect(failed(await callStart(l.executor, { key: 'deploy-succeeded' })).error.code).toBe(
          'key_expired',
        );

        l.clock.advance(10 * YEAR);
        expect((await sweep()).tombstoned).toBe(0);
        expect(await l.t.countTombstones()).toBe(1);
        expect(await l.store.ledger.list()).toHaveLength(4);
      });
    });
  });
}
