import { describe, expect, it, onTestFinished } from 'vitest';
import type { OperationError, OperationRecord } from '../../src/core/operation-record.js';
import { OPERATION_STATES, type OperationState } from '../../src/core/operation-state.js';
import { DEFAULT_RETRY_POLICY } from '../../src/core/retry-policy.js';
import type { CallOutcome, Executor } from '../../src/executor/executor.js';
import type { OperationPatch } from '../../src/operations/ledger-commands.js';
import type { IdemStore } from '../../src/ports/idem-store.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
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
  transition as transitionLedger,
} from '../../src/operations/ledger-commands.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;
const LEASE_MS = 30_000;

type Success = Extract<CallOutcome, { ok: true }>;
type Failure = Extract<CallOutcome, { ok: false }>;
type FinalState = 'succeeded' | 'failed' | 'cancelled' | 'outcome_unknown';

const TERMINAL: readonly FinalState[] = ['succeeded', 'failed', 'cancelled'];
const FINAL: readonly FinalState[] = [...TERMINAL, 'outcome_unknown'];
const AMBIGUOUS: OperationError = { code: 'outcome_unknown', message: 'the provider did not answer in time' };

function succeeded(outcome: CallOutcome): Success {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.error.code}: ${outcome.error.message}`);
  return outcome;
}

function failed(outcome: CallOutcome): Failure {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.result)}`);
  return outcome;
}

function defined<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`expected ${what}, got undefined`);
  return value;
}

/** Lets queued promise callbacks and I/O callbacks run (no timers, no wall-clock sleep). */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
    }

    async function open(inFlightWaitMs = 0): Promise<Ledger> {
      const clock = new FakeClock();
      const t = await factory.create({ clock });
      onTestFinished(() => t.close());
      return { t, store: t.store, clock, executor: durableExecutor(t.store, { clock, inFlightWaitMs }) };
    }

    async function get(l: Ledger, operationId: string): Promise<OperationRecord> {
      return defined(await l.store.ledger.get(operationId), `operation ${operationId}`);
    }

    function claim(l: Ledger, workerId: string, leaseMs = LEASE_MS): Promise<OperationRecord | undefined> {
      return l.store.ledger.claim({ workerId, now: l.clock.now(), leaseMs });
    }

    /** Claims and checks that the claim is `operationId` (tests keep one due operation at a time). */
    async function claimOp(l: Ledger, operationId: string, workerId: string): Promise<OperationRecord> {
      const claimed = defined(await claim(l, workerId), `a claim of ${operationId} by ${workerId}`);
      expect(claimed.operationId).toBe(operationId);
      return claimed;
    }

    function accept(l: Ledger, key = 'deploy-1', args = DEPLOYMENT_ARGS): Promise<OperationRecord> {
      return startDurable(l.executor, { key, args });
    }

    function transition(
      l: Ledger,
      op: OperationRecord,
      workerId: string,
      to: OperationState,
      patch?: OperationPatch,
      from: readonly OperationState[] = [op.status],
    ): Promise<OperationRecord | undefined> {
      return transitionLedger(l.store.ledger, op.operationId, {
        workerId,
        from,
        to,
        now: l.clock.now(),
        ...(patch === undefined ? {} : { patch }),
      });
    }

    /** An accepted operation, claimed by `workerId` and moved to `running` by its first attempt. */
    async function running(l: Ledger, key = 'deploy-1', workerId = 'w1'): Promise<OperationRecord> {
      const op = await accept(l, key);
      await claimOp(l, op.operationId, workerId);
      return defined(
        await startAttempt(l.store.ledger, op.operationId, {
          workerId,
          attemptId: `att-${key}-1`,
          now: l.clock.now(),
          from: ['accepted'],
        }),
        'startAttempt',
      );
    }

    /**
     * An operation in a final state, reached by the worker `w1` the way a worker does. With
     * `release: false` the worker still holds its (unexpired) lease afterwards.
     */
    async function finalOp(
      l: Ledger,
      state: FinalState,
      key = `deploy-${state}`,
      release = true,
    ): Promise<OperationRecord> {
      const now = l.clock.now();
      let settled: OperationRecord | undefined;
      if (state === 'succeeded') {
        const op = await running(l, key);
        settled = await transition(l, op, 'w1', 'succeeded', {
          resourceId: `dep-${key}`,
          result: { status: 'succeeded', operation_id: op.operationId, resource_id: `dep-${key}` },
          expiresAt: now + DAY,
          dispatched: false,
          releaseLease: release,
        });
      } else if (state === 'failed') {
        const op = await accept(l, key);
        await claimOp(l, op.operationId, 'w1');
        settled = await transition(l, op, 'w1', 'failed', {
          error: { code: 'invalid_argument', message: 'the provider refused the deployment' },
          expiresAt: now + DAY,
          releaseLease: release,
        });
      } else if (state === 'cancelled') {
        const op = await accept(l, key);
        await claimOp(l, op.operationId, 'w1');
        const cancelling = defined(await requestCancel(l.store.ledger, op.operationId, now), 'requestCancel');
        settled = await transition(l, cancelling, 'w1', 'cancelled', {
          expiresAt: now + DAY,
          releaseLease: release,
        });
      } else {
        const op = await running(l, key);
        settled = await transition(l, op, 'w1', 'outcome_unknown', {
          error: AMBIGUOUS,
          dispatched: true,
          releaseLease: release,
        });
      }
      const record = defined(settled, `a transition to ${state}`);
      expect(record.status).toBe(state);
      return record;
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

        const record = await get(l, outcome.operationId);
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
          expect((await get(l, id)).status).toBe(state);
          const retry = failed(await callStart(l.executor, { key: 'deploy-1' }));
          expect(retry.status, state).toBe('running');
          expect(retry.error.code, state).toBe('in_progress');
          expect(retry.error.retryable, state).toBe(true);
          expect(retry.error.operationId, state).toBe(id);
          expect(retry.error.nextStep, state).toBe('follow_operation');
          expect(retry.error.nextAction, state).toBeUndefined();
        };

        await checkRetry('accepted');
        await claimOp(l, id, 'w1');
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
        const op = await accept(l, 'deploy-1', { service: 'api', version: '1.0.0' });
        const conflict = failed(
          await callStart(l.executor, { key: 'deploy-1', args: { service: 'api', version: '2.0.0' } }),
        );
        expect(conflict.error.code).toBe('payload_conflict');
        expect(conflict.error.retryable).toBe(false);
        expect(await get(l, op.operationId)).toEqual(op);
        expect(await l.store.ledger.list()).toEqual([op]);
      });

      it('waits within the in-flight bound and returns the result when the worker finishes meanwhile', async () => {
        const l = await open(2000);
        const op = await running(l);
        const retry = callStart(l.executor, { key: 'deploy-1' });
        let answered = false;
        void retry.then(() => (answered = true));

        await untilSleeping(l.clock);
        l.clock.advance(25);
        await untilSleeping(l.clock);
        expect(answered).toBe(false);

        const result = { status: 'succeeded', operation_id: op.operationId, resource_id: 'dep-1' };
        defined(
          await transition(l, op, 'w1', 'succeeded', {
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
        const op = await accept(l);
        const started = l.clock.monotonic();
        const outcome = failed(await drive(l.clock, callStart(l.executor, { key: 'deploy-1' })));
        expect(outcome.error.code).toBe('in_progress');
        expect(outcome.error.operationId).toBe(op.operationId);
        expect(l.clock.monotonic() - started).toBeGreaterThanOrEqual(200);
        expect(l.clock.monotonic() - started).toBeLessThan(250);
      });

      it('replays the final state to a retry: the stored result, or the stored failure', async () => {
        const l = await open();
        const done = await finalOp(l, 'succeeded', 'deploy-ok');
        const replay = succeeded(await callStart(l.executor, { key: 'deploy-ok' }));
        expect(replay.replayed).toBe(true);
        expect(replay.operationId).toBe(done.operationId);
        expect(replay.result).toEqual(done.result);

        const refused = await finalOp(l, 'failed', 'deploy-bad');
        const failure = failed(await callStart(l.executor, { key: 'deploy-bad' }));
        expect(failure.status).toBe('failed');
        expect(failure.error.code).toBe('invalid_argument');
        expect(failure.error.message).toBe(refused.error?.message);
        expect(failure.error.operationId).toBe(refused.operationId);
        expect(await l.store.ledger.list()).toHaveLength(2);
      });
    });

    describe('claimDue', () => {
      it('leases a due operation to exactly one worker', async () => {
        const l = await open();
        const op = await accept(l);
        const now = l.clock.now();

        const claimed = await claimOp(l, op.operationId, 'w1');
        expect(claimed).toMatchObject({
          status: 'accepted',
          kind: 'durable',
          leaseOwner: 'w1',
          leaseExpiresAt: now + LEASE_MS,
          args: DEPLOYMENT_ARGS,
        });
        expect(await get(l, op.operationId)).toMatchObject({
          leaseOwner: 'w1',
          leaseExpiresAt: now + LEASE_MS,
        });

        expect(await claim(l, 'w2')).toBeUndefined();
        // Not even the holder gets a second lease while its own is live.
        expect(await claim(l, 'w1')).toBeUndefined();
        l.clock.advance(LEASE_MS - 1);
        expect(await claim(l, 'w2')).toBeUndefined();
        expect((await get(l, op.operationId)).leaseOwner).toBe('w1');
      });

      it('lets another worker take over once the lease expired, and the old holder is then refused', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        l.clock.advance(LEASE_MS);

        const taken = await claimOp(l, op.operationId, 'w2');
        expect(taken).toMatchObject({
          status: 'running',
          attemptCount: 1,
          dispatched: true,
          leaseOwner: 'w2',
          leaseExpiresAt: l.clock.now() + LEASE_MS,
        });
        const before = await get(l, op.operationId);

        expect(
          await startAttempt(l.store.ledger, op.operationId, {
            workerId: 'w1',
            attemptId: 'att-late',
            now: l.clock.now(),
            from: ['running'],
          }),
        ).toBeUndefined();
        expect(await transition(l, before, 'w1', 'succeeded', { resourceId: 'dep-x' })).toBeUndefined();
        expect(
          await l.store.ledger.renew(op.operationId, {
            workerId: 'w1',
            now: l.clock.now(),
            leaseExpiresAt: l.clock.now() + LEASE_MS,
          }),
        ).toBe(false);
        expect(await get(l, op.operationId)).toEqual(before);
        expect((await l.store.ledger.attempts(op.operationId)).map((a) => a.workerId)).toEqual(['w1']);
      });

      it('gives one due operation to exactly one of many workers on separate connections', async () => {
        const first = await factory.create();
        onTestFinished(() => first.close());
        const connections = [first];
        for (let i = 1; i < 6; i += 1) {
          const t = await factory.create({ path: first.path });
          onTestFinished(() => t.close());
          connections.push(t);
        }
        const op = await startDurable(durableExecutor(first.store), { key: 'deploy-1' });
        const now = op.createdAt + 1;

        const claims = await Promise.all(
          connections.map((t, i) => t.store.ledger.claim({ workerId: `w${i}`, now, leaseMs: LEASE_MS })),
        );
        const winners = claims.filter((c): c is OperationRecord => c !== undefined);
        expect(winners).toHaveLength(1);
        expect(winners[0]?.operationId).toBe(op.operationId);
        const stored = defined(await first.store.ledger.get(op.operationId), 'the operation');
        expect(stored.leaseOwner).toBe(winners[0]?.leaseOwner);
      });

      it('hands distinct due operations to distinct workers, then nothing', async () => {
        const l = await open();
        const ids = new Set<string>();
        for (let i = 0; i < 3; i += 1) ids.add((await accept(l, `deploy-${i}`)).operationId);

        const claimed: OperationRecord[] = [];
        for (let i = 0; i < 3; i += 1) claimed.push(defined(await claim(l, `w${i}`), `claim ${i}`));
        expect(new Set(claimed.map((c) => c.operationId))).toEqual(ids);
        expect(claimed.map((c) => c.leaseOwner)).toEqual(['w0', 'w1', 'w2']);
        expect(await claim(l, 'w3')).toBeUndefined();
      });

      it('claims a cancel_requested operation so that a worker can settle it', async () => {
        const l = await open();
        const op = await accept(l);
        await requestCancel(l.store.ledger, op.operationId, l.clock.now());
        const claimed = await claimOp(l, op.operationId, 'w1');
        expect(claimed.status).toBe('cancel_requested');
      });

      it('does not claim an operation in backoff before its nextAttemptAt, but claims others', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        const retryAt = l.clock.now() + 5000;
        const waiting = defined(
          await transition(l, op, 'w1', 'running', { nextAttemptAt: retryAt, releaseLease: true }),
          'backoff transition',
        );
        expect(waiting.status).toBe('running');
        expect(waiting.leaseOwner).toBeUndefined();
        expect(waiting.leaseExpiresAt).toBeUndefined();

        const other = await accept(l, 'deploy-2');
        expect((await claim(l, 'w2'))?.operationId).toBe(other.operationId);
        expect(await claim(l, 'w3')).toBeUndefined();

        l.clock.advance(4999);
        expect(await claim(l, 'w3')).toBeUndefined();
        l.clock.advance(1);
        const again = await claimOp(l, op.operationId, 'w3');
        expect(again).toMatchObject({ status: 'running', attemptCount: 1, leaseOwner: 'w3' });
      });

      it('never claims a final operation, even long after its lease expired', async () => {
        const l = await open();
        for (const state of FINAL) {
          await finalOp(l, state, `released-${state}`, true);
          await finalOp(l, state, `held-${state}`, false);
        }
        expect(await claim(l, 'w2')).toBeUndefined();
        l.clock.advance(LEASE_MS);
        expect(await claim(l, 'w2')).toBeUndefined();
        l.clock.advance(YEAR);
        expect(await claim(l, 'w2')).toBeUndefined();
        for (const state of FINAL) {
          expect(await l.store.ledger.list({ status: state }), state).toHaveLength(2);
        }
      });

      it('never claims a local operation (a receipt)', async () => {
        const l = await open();
        const note = succeeded(
          await l.t.executor.run(l.t.createNote, {
            principal: 'alice',
            workspace: 'ws-1',
            key: 'note-1',
            args: { body: 'hello' },
          }),
        );
        expect((await get(l, note.operationId)).kind).toBe('local');
        expect(await claim(l, 'w1')).toBeUndefined();
        l.clock.advance(YEAR);
        expect(await claim(l, 'w1')).toBeUndefined();
        expect((await get(l, note.operationId)).leaseOwner).toBeUndefined();
      });
    });

    describe('renewLease', () => {
      it('extends the lease for the holder only', async () => {
        const l = await open();
        const op = await accept(l);
        const start = l.clock.now();
        await claimOp(l, op.operationId, 'w1');

        expect(
          await l.store.ledger.renew(op.operationId, {
            workerId: 'w2',
            now: l.clock.now(),
            leaseExpiresAt: start + 10 * LEASE_MS,
          }),
        ).toBe(false);
        expect((await get(l, op.operationId)).leaseExpiresAt).toBe(start + LEASE_MS);

        l.clock.advance(LEASE_MS / 2);
        expect(
          await l.store.ledger.renew(op.operationId, {
            workerId: 'w1',
            now: l.clock.now(),
            leaseExpiresAt: start + 2 * LEASE_MS,
          }),
        ).toBe(true);
        expect(await get(l, op.operationId)).toMatchObject({
          leaseOwner: 'w1',
          leaseExpiresAt: start + 2 * LEASE_MS,
        });

        l.clock.advance(LEASE_MS / 2); // past the original lease
        expect(await claim(l, 'w2')).toBeUndefined();
        l.clock.advance(LEASE_MS); // past the renewed lease
        expect((await claim(l, 'w2'))?.operationId).toBe(op.operationId);
      });
    });

    describe('startAttempt and finishAttempt', () => {
      it('moves accepted to running, counts the attempt, sets dispatched and records the attempt row', async () => {
        const l = await open();
        const op = await accept(l);
        await claimOp(l, op.operationId, 'w1');
        l.clock.advance(10);
        const now = l.clock.now();

        const started = defined(
          await startAttempt(l.store.ledger, op.operationId, {
            workerId: 'w1',
            attemptId: 'att-a1',
            now,
            from: ['accepted', 'running'],
          }),
          'startAttempt',
        );
        expect(started).toMatchObject({
          operationId: op.operationId,
          status: 'running',
          attemptCount: 1,
          dispatched: true,
          updatedAt: now,
          leaseOwner: 'w1',
        });
        expect(await get(l, op.operationId)).toEqual(started);
        expect(await l.store.ledger.attempts(op.operationId)).toEqual([
          { attemptId: 'att-a1', operationId: op.operationId, number: 1, workerId: 'w1', startedAt: now },
        ]);
      });

      it('is refused for a worker without the lease, and changes nothing', async () => {
        const l = await open();
        const op = await accept(l);
        const attempt = (workerId: string) =>
          startAttempt(l.store.ledger, op.operationId, {
            workerId,
            attemptId: `att-${workerId}`,
            now: l.clock.now(),
            from: ['accepted', 'running'],
          });

        // Nobody holds a lease yet.
        expect(await attempt('w1')).toBeUndefined();
        const claimed = await claimOp(l, op.operationId, 'w1');
        expect(await attempt('w2')).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(claimed);
        expect(await l.store.ledger.attempts(op.operationId)).toEqual([]);
      });

      it('is refused when the state is not one of from (cancel_requested), and changes nothing', async () => {
        const l = await open();
        const op = await accept(l);
        await claimOp(l, op.operationId, 'w1');
        const cancelling = defined(
          await requestCancel(l.store.ledger, op.operationId, l.clock.now()),
          'cancel',
        );
        expect(cancelling.status).toBe('cancel_requested');

        expect(
          await startAttempt(l.store.ledger, op.operationId, {
            workerId: 'w1',
            attemptId: 'att-1',
            now: l.clock.now(),
            from: ['accepted', 'running'],
          }),
        ).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(cancelling);
        expect(await l.store.ledger.attempts(op.operationId)).toEqual([]);
      });

      it('MUST refuse a worker whose lease expired even if nobody took over yet', async () => {
        const l = await open();
        const op = await accept(l);
        await claimOp(l, op.operationId, 'w1');
        l.clock.advance(LEASE_MS);
        const before = await get(l, op.operationId);

        const late = await startAttempt(l.store.ledger, op.operationId, {
          workerId: 'w1',
          attemptId: 'att-late',
          now: l.clock.now(),
          from: ['accepted'],
        });
        expect(late).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(before);
        expect(await l.store.ledger.attempts(op.operationId)).toEqual([]);
      });

      it('finishAttempt records end, outcome and detail; the next attempt is number 2', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        const [first] = await l.store.ledger.attempts(op.operationId);
        const attemptId = defined(first, 'the first attempt').attemptId;

        l.clock.advance(700);
        await l.store.ledger.finishAttempt(attemptId, {
          endedAt: l.clock.now(),
          outcome: 'retryable_failure',
          detail: 'provider answered 503',
        });
        expect(await l.store.ledger.attempts(op.operationId)).toEqual([
          {
            attemptId,
            operationId: op.operationId,
            number: 1,
            workerId: 'w1',
            startedAt: l.clock.now() - 700,
            endedAt: l.clock.now(),
            outcome: 'retryable_failure',
            detail: 'provider answered 503',
          },
        ]);

        await transition(l, op, 'w1', 'running', { nextAttemptAt: l.clock.now() + 100, releaseLease: true });
        l.clock.advance(100);
        await claimOp(l, op.operationId, 'w2');
        const second = defined(
          await startAttempt(l.store.ledger, op.operationId, {
            workerId: 'w2',
            attemptId: 'att-2',
            now: l.clock.now(),
            from: ['running'],
          }),
          'second attempt',
        );
        expect(second).toMatchObject({ status: 'running', attemptCount: 2, dispatched: true });
        await l.store.ledger.finishAttempt('att-2', { endedAt: l.clock.now(), outcome: 'succeeded' });

        const attempts = await l.store.ledger.attempts(op.operationId);
        expect(attempts.map((a) => [a.number, a.workerId, a.outcome])).toEqual([
          [1, 'w1', 'retryable_failure'],
          [2, 'w2', 'succeeded'],
        ]);
        expect(attempts[1]?.detail).toBeUndefined();
        expect(attempts[1]?.endedAt).toBe(l.clock.now());
      });
    });

    describe('open attempts are closed', () => {
      it('claimDue closes an attempt the previous lease holder left open: interrupted, ended at the claim', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        l.clock.advance(LEASE_MS);
        const now = l.clock.now();
        await claimOp(l, op.operationId, 'w2');
        const [attempt, ...more] = await l.store.ledger.attempts(op.operationId);
        expect(more).toEqual([]);
        expect(attempt).toEqual({
          attemptId: 'att-deploy-1-1',
          operationId: op.operationId,
          number: 1,
          workerId: 'w1',
          startedAt: now - LEASE_MS,
          endedAt: now,
          outcome: 'interrupted',
          detail: expect.stringContaining('w2'),
        });
        // Its worker may still record what it learned; that wins.
        await l.store.ledger.finishAttempt('att-deploy-1-1', {
          endedAt: now + 1,
          outcome: 'ambiguous',
          detail: 'ambiguous: timeout',
        });
        expect((await l.store.ledger.attempts(op.operationId))[0]).toMatchObject({
          endedAt: now + 1,
          outcome: 'ambiguous',
          detail: 'ambiguous: timeout',
        });
      });

      it('claimDue leaves finished attempts, and other operations, alone', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        await l.store.ledger.finishAttempt('att-deploy-1-1', {
          endedAt: l.clock.now(),
          outcome: 'retryable_failure',
          detail: 'throttled (HTTP 503)',
        });
        await transition(l, op, 'w1', 'running', { nextAttemptAt: l.clock.now() + 100, releaseLease: true });
        const finished = await l.store.ledger.attempts(op.operationId);
        const other = await accept(l, 'deploy-2');
        await claimOp(l, other.operationId, 'w2');
        const open2 = defined(
          await startAttempt(l.store.ledger, other.operationId, {
            workerId: 'w2',
            attemptId: 'att-deploy-2-1',
            now: l.clock.now(),
            from: ['accepted'],
          }),
          'startAttempt',
        );
        l.clock.advance(100);
        await claimOp(l, op.operationId, 'w3');
        expect(await l.store.ledger.attempts(op.operationId)).toEqual(finished);
        const [second] = await l.store.ledger.attempts(open2.operationId);
        expect(second?.endedAt).toBeUndefined();
      });

      for (const state of FINAL) {
        it(`a transition to ${state} closes the open attempt in the same write`, async () => {
          const l = await open();
          const op = await running(l, `deploy-${state}-open`, 'w1');
          l.clock.advance(300);
          const patch: OperationPatch =
            state === 'succeeded'
              ? { resourceId: 'dep-1', result: { status: 'succeeded' }, expiresAt: l.clock.now() + DAY }
              : state === 'outcome_unknown'
                ? { error: AMBIGUOUS }
                : state === 'failed'
                  ? {
                      error: { code: 'internal', message: 'deadline exhausted' },
                      expiresAt: l.clock.now() + DAY,
                    }
                  : { expiresAt: l.clock.now() + DAY };
          const from: OperationState[] = ['running'];
          if (state === 'cancelled') {
            await requestCancel(l.store.ledger, op.operationId, l.clock.now());
            from[0] = 'cancel_requested';
          }
          defined(
            await transition(l, op, 'w1', state, { ...patch, releaseLease: true }, from),
            `transition to ${state}`,
          );
          expect(await l.store.ledger.attempts(op.operationId)).toEqual([
            expect.objectContaining({ number: 1, endedAt: l.clock.now(), outcome: state }),
          ]);
        });
      }

      it('a transition that keeps the operation active, or is refused, leaves the attempt open', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        expect(await transition(l, op, 'w2', 'failed', { error: AMBIGUOUS })).toBeUndefined();
        await transition(l, op, 'w1', 'running', { nextAttemptAt: l.clock.now() + 100 });
        const [attempt] = await l.store.ledger.attempts(op.operationId);
        expect(attempt?.endedAt).toBeUndefined();
        expect(attempt?.outcome).toBeUndefined();
      });
    });

    describe('transition', () => {
      it('applies a legal move with its patch and returns the new record', async () => {
        const l = await open();
        const op = await running(l);
        l.clock.advance(1234);
        const now = l.clock.now();
        const result = { status: 'succeeded', operation_id: op.operationId, resource_id: 'dep-7' };

        const done = defined(
          await transition(l, op, 'w1', 'succeeded', {
            resourceId: 'dep-7',
            result,
            expiresAt: now + DAY,
            dispatched: false,
            releaseLease: true,
          }),
          'transition',
        );
        expect(done).toMatchObject({
          operationId: op.operationId,
          kind: 'durable',
          status: 'succeeded',
          resourceId: 'dep-7',
          result,
          expiresAt: now + DAY,
          dispatched: false,
          updatedAt: now,
          createdAt: op.createdAt,
          attemptCount: 1,
          args: DEPLOYMENT_ARGS,
          deadlineAt: op.deadlineAt,
        });
        expect(done.leaseOwner).toBeUndefined();
        expect(done.leaseExpiresAt).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(done);
        expect((await l.store.ledger.list({ status: 'succeeded' })).map((r) => r.operationId)).toEqual([
          op.operationId,
        ]);
      });

      it('keeps the lease when the patch does not release it', async () => {
        const l = await open();
        const op = await running(l);
        const lease = (await get(l, op.operationId)).leaseExpiresAt;
        const next = defined(await transition(l, op, 'w1', 'running', { dispatched: false }), 'transition');
        expect(next).toMatchObject({ status: 'running', dispatched: false, leaseOwner: 'w1' });
        expect(next.leaseExpiresAt).toBe(lease);
        expect(await claim(l, 'w2')).toBeUndefined();
      });

      it('rejects an illegal move with invalid_argument and changes nothing', async () => {
        const l = await open();
        const op = await accept(l, 'deploy-1');
        const claimed = await claimOp(l, op.operationId, 'w1');

        for (const to of ['succeeded', 'outcome_unknown', 'cancelled', 'accepted'] as const) {
          await expect(transition(l, claimed, 'w1', to), `accepted -> ${to}`).rejects.toMatchObject({
            code: 'invalid_argument',
          });
        }
        expect(await get(l, op.operationId)).toEqual(claimed);

        // succeeded -> running, by the worker that still holds the lease.
        const done = await finalOp(l, 'succeeded', 'deploy-2', false);
        expect(done.leaseOwner).toBe('w1');
        await expect(transition(l, done, 'w1', 'running')).rejects.toMatchObject({
          code: 'invalid_argument',
        });
        expect(await get(l, done.operationId)).toEqual(done);
      });

      it('returns undefined for a worker without the lease, or a state not in from, and changes nothing', async () => {
        const l = await open();
        const op = await accept(l);
        expect(await transition(l, op, 'w1', 'running')).toBeUndefined(); // nobody holds a lease
        const claimed = await claimOp(l, op.operationId, 'w1');

        expect(await transition(l, claimed, 'w2', 'running')).toBeUndefined();
        expect(await transition(l, claimed, 'w2', 'failed', { error: AMBIGUOUS })).toBeUndefined();
        expect(await transition(l, claimed, 'w1', 'running', {}, ['running'])).toBeUndefined();
        expect(
          await transition(l, claimed, 'w1', 'cancelled', {}, ['cancel_requested', 'running']),
        ).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(claimed);
      });

      it('MUST refuse a worker whose lease expired even if nobody took over yet', async () => {
        const l = await open();
        const op = await running(l, 'deploy-1', 'w1');
        l.clock.advance(LEASE_MS);
        const before = await get(l, op.operationId);

        const late = await transition(l, before, 'w1', 'succeeded', {
          resourceId: 'dep-late',
          expiresAt: l.clock.now() + DAY,
          releaseLease: true,
        });
        expect(late).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(before);
      });

      it('never changes a terminal state, even for the lease holder', async () => {
        const l = await open();
        for (const state of TERMINAL) {
          const op = await finalOp(l, state, `deploy-${state}`, false);
          expect(op.leaseOwner, state).toBe('w1');
          for (const to of OPERATION_STATES) {
            await expect(transition(l, op, 'w1', to), `${state} -> ${to}`).rejects.toMatchObject({
              code: 'invalid_argument',
            });
          }
          expect(await requestCancel(l.store.ledger, op.operationId, l.clock.now()), state).toEqual(op);
          await expect(
            resolve(l.store.ledger, op.operationId, {
              to: 'failed',
              by: 'oncall',
              now: l.clock.now(),
              reason: 'x',
              expiresAt: l.clock.now() + DAY,
            }),
            state,
          ).rejects.toMatchObject({ code: 'invalid_argument' });
          expect(await get(l, op.operationId), state).toEqual(op);
        }
      });

      it('never lets a worker move outcome_unknown: only an operator resolves it', async () => {
        const l = await open();
        const op = await finalOp(l, 'outcome_unknown', 'deploy-1', false);
        expect(op.leaseOwner).toBe('w1');
        expect(op.error).toEqual(AMBIGUOUS);
        expect(op.expiresAt).toBeUndefined();
        for (const to of OPERATION_STATES) {
          await expect(transition(l, op, 'w1', to), `outcome_unknown -> ${to}`).rejects.toMatchObject({
            code: 'invalid_argument',
          });
        }
        expect(await get(l, op.operationId)).toEqual(op);
      });

      it('schedules a backoff with running -> running, nextAttemptAt and releaseLease', async () => {
        const l = await open();
        const op = await running(l);
        const retryAt = l.clock.now() + 2000;
        const waiting = defined(
          await transition(l, op, 'w1', 'running', {
            dispatched: false,
            nextAttemptAt: retryAt,
            releaseLease: true,
          }),
          'backoff',
        );
        expect(waiting).toMatchObject({ status: 'running', dispatched: false, attemptCount: 1 });
        expect(waiting.leaseOwner).toBeUndefined();

        expect(await claim(l, 'w1')).toBeUndefined();
        l.clock.advance(1999);
        expect(await claim(l, 'w2')).toBeUndefined();
        l.clock.advance(1);
        expect(await claimOp(l, op.operationId, 'w2')).toMatchObject({ status: 'running', leaseOwner: 'w2' });
      });

      it('releases the lease when the patch sets nextAttemptAt (documented on OperationPatch)', async () => {
        const l = await open();
        const op = await running(l);
        const retryAt = l.clock.now() + 2000;
        const waiting = defined(
          await transition(l, op, 'w1', 'running', { nextAttemptAt: retryAt }),
          'backoff without releaseLease',
        );
        expect(waiting.leaseOwner).toBeUndefined();
        l.clock.advance(2000); // backoff over, well before the 30 s lease would have expired
        expect((await claim(l, 'w2'))?.operationId).toBe(op.operationId);
      });
    });

    describe('requestCancel', () => {
      it('moves accepted to cancel_requested and records when', async () => {
        const l = await open();
        const op = await accept(l);
        l.clock.advance(500);
        const now = l.clock.now();
        const cancelling = defined(await requestCancel(l.store.ledger, op.operationId, now), 'requestCancel');
        expect(cancelling).toMatchObject({
          operationId: op.operationId,
          status: 'cancel_requested',
          cancelRequestedAt: now,
          updatedAt: now,
          attemptCount: 0,
        });
        expect(await get(l, op.operationId)).toEqual(cancelling);
      });

      it('moves running to cancel_requested; the worker then settles it from cancel_requested', async () => {
        const l = await open();
        const op = await running(l);
        const now = l.clock.now();
        const cancelling = defined(await requestCancel(l.store.ledger, op.operationId, now), 'requestCancel');
        expect(cancelling).toMatchObject({
          status: 'cancel_requested',
          cancelRequestedAt: now,
          dispatched: true,
          attemptCount: 1,
        });

        // A worker that still believes the operation is running is refused.
        expect(await transition(l, cancelling, 'w1', 'succeeded', {}, ['running'])).toBeUndefined();
        const settled = defined(
          await transition(l, cancelling, 'w1', 'cancelled', { expiresAt: now + DAY, releaseLease: true }),
          'cancel_requested -> cancelled',
        );
        expect(settled).toMatchObject({ status: 'cancelled', cancelRequestedAt: now });
      });

      it('leaves cancel_requested and every final state unchanged', async () => {
        const l = await open();
        const records: OperationRecord[] = [];
        for (const state of FINAL) records.push(await finalOp(l, state));
        const pending = await accept(l, 'deploy-pending');
        records.push(
          defined(await requestCancel(l.store.ledger, pending.operationId, l.clock.now()), 'cancel'),
        );

        l.clock.advance(1000);
        for (const record of records) {
          const answer = await requestCancel(l.store.ledger, record.operationId, l.clock.now());
          expect(answer, record.status).toEqual(record);
          expect(await get(l, record.operationId), record.status).toEqual(record);
        }
      });

      it('answers undefined for an unknown operation', async () => {
        const l = await open();
        expect(
          await requestCancel(l.store.ledger, 'op_00000000000000000000000000000000', l.clock.now()),
        ).toBeUndefined();
      });
    });

    describe('resolve', () => {
      it('settles outcome_unknown as succeeded, recording who, when and the resource', async () => {
        const l = await open();
        const op = await finalOp(l, 'outcome_unknown');
        l.clock.advance(HOUR);
        const now = l.clock.now();

        const resolved = defined(
          await resolve(l.store.ledger, op.operationId, {
            to: 'succeeded',
            by: 'oncall@example.com',
            now,
            resourceId: 'dep-found',
            expiresAt: now + DAY,
          }),
          'resolve',
        );
        expect(resolved).toMatchObject({
          operationId: op.operationId,
          status: 'succeeded',
          resourceId: 'dep-found',
          resolvedBy: 'oncall@example.com',
          resolvedAt: now,
          expiresAt: now + DAY,
          updatedAt: now,
        });
        expect(resolved.result?.resource_id).toBe('dep-found');
        expect(resolved.leaseOwner).toBeUndefined();
        expect(await get(l, op.operationId)).toEqual(resolved);

        // A retry now replays the settled result.
        const replay = succeeded(await callStart(l.executor, { key: 'deploy-outcome_unknown' }));
        expect(replay.result.resource_id).toBe('dep-found');
      });

      it('settles outcome_unknown as failed, with the reason in the error message', async () => {
        const l = await open();
        const op = await finalOp(l, 'outcome_unknown');
        const now = l.clock.now();
        const resolved = defined(
          await resolve(l.store.ledger, op.operationId, {
            to: 'failed',
            by: 'oncall',
            now,
            reason: 'no deployment exists at the provider',
            expiresAt: now + DAY,
          }),
          'resolve',
        );
        expect(resolved).toMatchObject({ status: 'failed', resolvedBy: 'oncall', resolvedAt: now });
        expect(resolved.error?.message).toContain('no deployment exists at the provider');
        expect(await get(l, op.operationId)).toEqual(resolved);
      });

      it('rejects resolving anything but outcome_unknown with invalid_argument, changing nothing', async () => {
        const l = await open();
        const done = await finalOp(l, 'succeeded');
        const settled = await finalOp(l, 'outcome_unknown');
        await resolve(l.store.ledger, settled.operationId, {
          to: 'failed',
          by: 'oncall',
          now: l.clock.now(),
          reason: 'gone',
          expiresAt: l.clock.now() + DAY,
        });
        const resolvedOnce = await get(l, settled.operationId);
        const active = await running(l, 'deploy-running');
        const waiting = await accept(l, 'deploy-accepted');

        for (const record of [done, resolvedOnce, await get(l, active.operationId), waiting]) {
          for (const to of ['succeeded', 'failed'] as const) {
            await expect(
              resolve(l.store.ledger, record.operationId, {
                to,
                by: 'oncall',
                now: l.clock.now(),
                resourceId: 'dep-other',
                reason: 'again',
                expiresAt: l.clock.now() + DAY,
              }),
              `${record.status} -> ${to}`,
            ).rejects.toMatchObject({ code: 'invalid_argument' });
          }
          expect(await get(l, record.operationId)).toEqual(record);
        }
      });

      it('gives a resolved success the fields it is given, never letting them override status or ids', async () => {
        const l = await open();
        const op = await finalOp(l, 'outcome_unknown');
        const now = l.clock.now();
        const resolved = defined(
          await resolve(l.store.ledger, op.operationId, {
            to: 'succeeded',
            by: 'oncall',
            now,
            resourceId: 'dep-found',
            fields: { deployment_id: 'dep-found', service: 'api', version: '1.4.2', status: 'forged' },
            expiresAt: now + DAY,
          }),
          'resolve',
        );
        expect(resolved.result).toEqual({
          status: 'succeeded',
          operation_id: op.operationId,
          resource_id: 'dep-found',
          deployment_id: 'dep-found',
          service: 'api',
          version: '1.4.2',
        });
        expect(resolved.audit).toEqual([
          {
            action: 'resolve',
            by: 'oncall',
            at: now,
            from: 'outcome_unknown',
            to: 'succeeded',
            resourceId: 'dep-found',
            previousError: AMBIGUOUS,
          },
        ]);
      });

      it('refuses to settle as succeeded without a resource id, changing nothing', async () => {
        const l = await open();
        const op = await finalOp(l, 'outcome_unknown');
        await expect(
          resolve(l.store.ledger, op.operationId, {
            to: 'succeeded',
            by: 'oncall',
            now: l.clock.now(),
            expiresAt: l.clock.now() + DAY,
          }),
        ).rejects.toMatchObject({ code: 'invalid_argument' });
        expect(await get(l, op.operationId)).toEqual(op);
      });

      for (const state of ['failed', 'cancelled'] as const) {
        it(`corrects ${state} to succeeded with correct: true, recording who, when, the state before and why`, async () => {
          const l = await open();
          const op = await finalOp(l, state);
          l.clock.advance(2 * HOUR);
          const now = l.clock.now();
          const corrected = defined(
            await resolve(l.store.ledger, op.operationId, {
              to: 'succeeded',
              correct: true,
              by: 'oncall@example.com',
              now,
              resourceId: 'dep-found',
              fields: { deployment_id: 'dep-found', service: 'api', version: '1.4.2' },
              reason: 'the provider lists dep-found with our key',
              expiresAt: now + DAY,
            }),
            'correction',
          );
          expect(corrected).toMatchObject({
            status: 'succeeded',
            resourceId: 'dep-found',
            result: {
              status: 'succeeded',
              operation_id: op.operationId,
              resource_id: 'dep-found',
              deployment_id: 'dep-found',
              service: 'api',
              version: '1.4.2',
            },
            resolvedBy: 'oncall@example.com',
            resolvedAt: now,
            updatedAt: now,
            expiresAt: now + DAY,
            dispatched: false,
          });
          expect(corrected.error).toBeUndefined();
          expect(corrected.audit).toEqual([
            {
              action: 'correct',
              by: 'oncall@example.com',
              at: now,
              from: state,
              to: 'succeeded',
              reason: 'the provider lists dep-found with our key',
              resourceId: 'dep-found',
              ...(op.error === undefined ? {} : { previousError: op.error }),
            },
          ]);
          expect(await get(l, op.operationId)).toEqual(corrected);
          expect(await l.store.ledger.list({ status: 'succeeded' })).toEqual([corrected]);

          // A retry with the same key now replays the corrected result.
          const replay = succeeded(await callStart(l.executor, { key: `deploy-${state}` }));
          expect(replay.replayed).toBe(true);
          expect(replay.result).toEqual(corrected.result);
        });
      }

      it('keeps the whole trail: resolved as failed, then corrected to succeeded', async () => {
        const l = await open();
        const op = await finalOp(l, 'outcome_unknown');
        const first = l.clock.now();
        const failedOnce = defined(
          await resolve(l.store.ledger, op.operationId, {
            to: 'failed',
            by: 'alice',
            now: first,
            reason: 'not found at the provider',
            expiresAt: first + DAY,
          }),
          'resolve',
        );
        l.clock.advance(HOUR);
        const second = l.clock.now();
        const corrected = defined(
          await resolve(l.store.ledger, op.operationId, {
            to: 'succeeded',
            correct: true,
            by: 'bob',
            now: second,
            resourceId: 'dep-late',
            reason: 'it was listed under another page',
            expiresAt: second + DAY,
          }),
          'correction',
        );
        expect(corrected.audit).toEqual([
          {
            action: 'resolve',
            by: 'alice',
            at: first,
            from: 'outcome_unknown',
            to: 'failed',
            reason: 'not found at the provider',
            previousError: AMBIGUOUS,
          },
          {
            action: 'correct',
            by: 'bob',
            at: second,
            from: 'failed',
            to: 'succeeded',
            reason: 'it was listed under another page',
            resourceId: 'dep-late',
            previousError: failedOnce.error,
          },
        ]);
        expect(corrected).toMatchObject({ resolvedBy: 'bob', resolvedAt: second, status: 'succeeded' });
        expect(await get(l, op.operationId)).toEqual(corrected);
      });

      it('refuses what is not a correction of failed or cancelled to succeeded, with a reason; changes nothing', async () => {
        const l = await open();
        const done = await finalOp(l, 'succeeded');
        const unknown = await finalOp(l, 'outcome_unknown');
        const failure = await finalOp(l, 'failed');
        const cancelled = await finalOp(l, 'cancelled');
        const active = await running(l, 'deploy-running');
        const waiting = await accept(l, 'deploy-accepted');
        const correction = (to: 'succeeded' | 'failed', reason: string | null = 'found it') => ({
          to,
          correct: true,
          by: 'oncall',
          now: l.clock.now(),
          resourceId: 'dep-other',
          ...(reason === null ? {} : { reason }),
          expiresAt: l.clock.now() + DAY,
        });
        const attempts: Array<[OperationRecord, ReturnType<typeof correction>]> = [
          // A success is never corrected, to failed or to another success.
          [done, correction('failed')],
          [done, correction('succeeded')],
          // outcome_unknown is resolved, not corrected; active operations are the worker's.
          [unknown, correction('succeeded')],
          [await get(l, active.operationId), correction('succeeded')],
          [waiting, correction('succeeded')],
          // Only towards succeeded, and only with a reason.
          [failure, correction('failed')],
          [cancelled, correction('failed')],
          [failure, correction('succeeded', null)],
          [cancelled, correction('succeeded', '  ')],
        ];
        for (const [record, request] of attempts) {
          await expect(
            resolve(l.store.ledger, record.operationId, request),
            `${record.status} -> ${request.to}`,
          ).rejects.toMatchObject({ code: 'invalid_argument' });
          expect(await get(l, record.operationId)).toEqual(record);
        }
      });

      it('refuses a plain resolution of failed or cancelled, pointing to a correction', async () => {
        const l = await open();
        for (const state of ['failed', 'cancelled'] as const) {
          const op = await finalOp(l, state);
          await expect(
            resolve(l.store.ledger, op.operationId, {
              to: 'succeeded',
              by: 'oncall',
              now: l.clock.now(),
              resourceId: 'dep-x',
              expiresAt: l.clock.now() + DAY,
            }),
          ).rejects.toMatchObject({
            code: 'invalid_argument',
            message: expect.stringContaining('correct it to succeeded'),
          });
          expect(await get(l, op.operationId)).toEqual(op);
        }
      });

      it('applies exactly one of two concurrent corrections on separate connections', async () => {
        const l = await open();
        const op = await finalOp(l, 'failed');
        const other = await factory.create({ clock: l.clock, path: l.t.path });
        onTestFinished(() => other.close());
        const correctAs = (store: IdemStore<unknown>, by: string) =>
          resolve(store.ledger, op.operationId, {
            to: 'succeeded',
            correct: true,
            by,
            now: l.clock.now(),
            resourceId: `dep-${by}`,
            reason: `${by} found it`,
            expiresAt: l.clock.now() + DAY,
          });
        const results = await Promise.allSettled([
          correctAs(l.store, 'alice'),
          correctAs(other.store, 'bob'),
        ]);
        const applied = results.filter((r) => r.status === 'fulfilled');
        const refused = results.filter((r) => r.status === 'rejected');
        expect(applied).toHaveLength(1);
        expect(refused).toHaveLength(1);
        expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_argument' });
        const stored = await get(l, op.operationId);
        expect(stored.audit).toHaveLength(1);
        expect(stored.resourceId).toBe(`dep-${stored.resolvedBy}`);
      });

      it('answers undefined for an unknown operation', async () => {
        const l = await open();
        expect(
          await resolve(l.store.ledger, 'op_00000000000000000000000000000000', {
            to: 'failed',
            by: 'oncall',
            now: l.clock.now(),
            reason: 'x',
            expiresAt: l.clock.now() + DAY,
          }),
        ).toBeUndefined();
      });
    });

    describe('sweep and queries', () => {
      const sweepAt = (l: Ledger) =>
        l.store.housekeeping.sweep({ now: l.clock.now(), tombstoneTtlMs: DAY, batchSize: 10 });

      it('never touches unfinished operations, however far in the future', async () => {
        const l = await open();
        const unknown = await finalOp(l, 'outcome_unknown');
        const active = await running(l, 'deploy-running');
        const cancelling = await accept(l, 'deploy-cancelling');
        await requestCancel(l.store.ledger, cancelling.operationId, l.clock.now());
        const waiting = await accept(l, 'deploy-accepted');
        const ids = [unknown, active, cancelling, waiting].map((r) => r.operationId);
        const before = await Promise.all(ids.map((id) => get(l, id)));

        l.clock.advance(10 * YEAR);
        expect(await sweepAt(l)).toEqual({
          tombstoned: 0,
          tombstonesDeleted: 0,
          outboxDeleted: 0,
          batches: 0,
        });
        expect(await Promise.all(ids.map((id) => get(l, id)))).toEqual(before);
        expect(await l.t.countTombstones()).toBe(0);
      });

      it('never tombstones an unfinished operation, even one that was given an expiresAt', async () => {
        const l = await open();
        const op = await running(l);
        const marked = defined(
          await transition(l, op, 'w1', 'running', { expiresAt: l.clock.now() + HOUR, releaseLease: true }),
          'transition',
        );
        l.clock.advance(DAY);
        expect((await sweepAt(l)).tombstoned).toBe(0);
        expect(await get(l, op.operationId)).toEqual(marked);
      });

      it('tombstones a final durable operation past its expiresAt, and not before', async () => {
        const l = await open();
        const done = await finalOp(l, 'succeeded'); // expiresAt = now + DAY
        const pending = await accept(l, 'deploy-pending');

        l.clock.advance(DAY - 1);
        expect((await sweepAt(l)).tombstoned).toBe(0);
        expect(await get(l, done.operationId)).toEqual(done);

        l.clock.advance(1);
        expect(await sweepAt(l)).toMatchObject({ tombstoned: 1, tombstonesDeleted: 0 });
        expect(await l.store.ledger.get(done.operationId)).toBeUndefined();
        expect((await l.store.ledger.list()).map((r) => r.operationId)).toEqual([pending.operationId]);
        expect(await l.t.countTombstones()).toBe(1);
        expect(failed(await callStart(l.executor, { key: 'deploy-succeeded' })).error.code).toBe(
          'key_expired',
        );
      });

      it('getOperation and listOperations({ status }) see every durable state', async () => {
        const l = await open();
        const byState = new Map<OperationState, string>();
        for (const state of FINAL) byState.set(state, (await finalOp(l, state)).operationId);
        byState.set('running', (await running(l, 'deploy-running')).operationId);
        const cancelling = await accept(l, 'deploy-cancel');
        await requestCancel(l.store.ledger, cancelling.operationId, l.clock.now());
        byState.set('cancel_requested', cancelling.operationId);
        byState.set('accepted', (await accept(l, 'deploy-accepted')).operationId);

        expect([...byState.keys()].sort()).toEqual([...OPERATION_STATES].sort());
        for (const [state, id] of byState) {
          expect((await get(l, id)).status, state).toBe(state);
          const listed = await l.store.ledger.list({ status: state });
          expect(
            listed.map((r) => r.operationId),
            state,
          ).toEqual([id]);
          expect(listed[0], state).toEqual(await get(l, id));
        }
        expect(await l.store.ledger.list()).toHaveLength(OPERATION_STATES.length);
      });
    });
  });
}
