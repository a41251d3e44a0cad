import * as assert from 'node:assert/strict';
import type { OperationRecord } from '../../core/operation-record.js';
import { OPERATION_STATES, type OperationState } from '../../core/operation-state.js';
import {
  requestCancel,
  resolve,
  startAttempt,
  type OperationPatch,
  type Resolution,
} from '../../operations/ledger-transitions.js';
import type { IdemStore } from '../../ports/idem-store.js';
import {
  AMBIGUOUS,
  DAY,
  DEPLOYMENT_ARGS,
  FINAL,
  HOUR,
  LEASE_MS,
  TERMINAL,
  defined,
  identity,
  matches,
  rejectsWithCode,
  same,
  sameExisting,
  type Harness,
} from './harness.js';
import type { Case } from './receipt-cases.js';

const UNKNOWN_ID = 'op_00000000000000000000000000000000';

/** The ledger transitions (transition, startAttempt, requestCancel, resolve) over `ledger.update`. */
export function transitionCases<Tx>(): Array<Case<Tx>> {
  const attempt = (h: Harness<Tx>, op: OperationRecord, workerId: string, from: OperationState[]) =>
    startAttempt(h.store.ledger, op.operationId, {
      workerId,
      attemptId: `att-${workerId}`,
      now: h.now,
      from,
    });
  const resolveAs = (
    h: Harness<Tx>,
    op: OperationRecord,
    resolution: Omit<Resolution, 'now' | 'expiresAt'>,
  ) => resolve(h.store.ledger, op.operationId, { now: h.now, expiresAt: h.now + DAY, ...resolution });
  const cases: Array<Case<Tx>> = [
    [
      'startAttempt: accepted -> running, counted, dispatched, with its attempt row',
      async (h) => {
        const op = await h.accept();
        await h.claimOp(op.operationId, 'w1');
        h.advance(10);
        const now = h.now;
        const started = defined(
          await startAttempt(h.store.ledger, op.operationId, {
            workerId: 'w1',
            attemptId: 'att-a1',
            now,
            from: ['accepted', 'running'],
          }),
          'startAttempt',
        );
        matches(started, {
          operationId: op.operationId,
          status: 'running',
          attemptCount: 1,
          dispatched: true,
          updatedAt: now,
          leaseOwner: 'w1',
        });
        same(await h.get(op.operationId), started);
        same(await h.store.ledger.attempts(op.operationId), [
          { attemptId: 'att-a1', operationId: op.operationId, number: 1, workerId: 'w1', startedAt: now },
        ]);
      },
    ],
    [
      'startAttempt: refused without the lease, with an expired lease, or from another state; nothing changes',
      async (h) => {
        const op = await h.accept();
        assert.equal(await attempt(h, op, 'w1', ['accepted', 'running']), undefined, 'nobody holds a lease');
        const claimed = await h.claimOp(op.operationId, 'w1');
        assert.equal(await attempt(h, op, 'w2', ['accepted', 'running']), undefined, 'another holds it');
        same(await h.get(op.operationId), claimed);
        const cancelling = defined(await requestCancel(h.store.ledger, op.operationId, h.now), 'cancel');
        assert.equal(cancelling.status, 'cancel_requested');
        assert.equal(await attempt(h, op, 'w1', ['accepted', 'running']), undefined, 'not in from');
        same(await h.get(op.operationId), cancelling);
        h.advance(LEASE_MS);
        assert.equal(await attempt(h, op, 'w1', ['cancel_requested']), undefined, 'lease expired');
        same(await h.get(op.operationId), cancelling);
        same(await h.store.ledger.attempts(op.operationId), []);
      },
    ],
    [
      'transition: applies a legal move with its patch, releasing the lease when asked',
      async (h) => {
        const op = await h.running();
        h.advance(1234);
        const now = h.now;
        const result = { status: 'succeeded', operation_id: op.operationId, resource_id: 'dep-7' };
        const done = defined(
          await h.transition(op, 'w1', 'succeeded', {
            resourceId: 'dep-7',
            result,
            expiresAt: now + DAY,
            dispatched: false,
            releaseLease: true,
          }),
          'transition',
        );
        matches(done, {
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
          leaseOwner: undefined,
          leaseExpiresAt: undefined,
        });
        same(await h.get(op.operationId), done);
        same(
          (await h.store.ledger.list({ status: 'succeeded' })).map((r) => r.operationId),
          [op.operationId],
        );
      },
    ],
    [
      'transition: keeps the lease when the patch does not release it',
      async (h) => {
        const op = await h.running();
        const lease = (await h.get(op.operationId)).leaseExpiresAt;
        const next = defined(await h.transition(op, 'w1', 'running', { dispatched: false }), 'transition');
        matches(next, { status: 'running', dispatched: false, leaseOwner: 'w1', leaseExpiresAt: lease });
        assert.equal(await h.claim('w2'), undefined);
      },
    ],
    [
      'transition: an illegal move throws invalid_argument and changes nothing',
      async (h) => {
        const op = await h.accept('deploy-1');
        const claimed = await h.claimOp(op.operationId, 'w1');
        for (const to of ['succeeded', 'outcome_unknown', 'cancelled', 'accepted'] as const)
          await rejectsWithCode(h.transition(claimed, 'w1', to), 'invalid_argument', `accepted -> ${to}`);
        same(await h.get(op.operationId), claimed);
        const done = await h.finalOp('succeeded', 'deploy-2', false);
        assert.equal(done.leaseOwner, 'w1');
        await rejectsWithCode(h.transition(done, 'w1', 'running'), 'invalid_argument');
        same(await h.get(done.operationId), done);
      },
    ],
    [
      'transition: refused (undefined) without the lease, with an expired one, or from another state; nothing changes',
      async (h) => {
        const op = await h.accept();
        assert.equal(await h.transition(op, 'w1', 'running'), undefined);
        const claimed = await h.claimOp(op.operationId, 'w1');
        assert.equal(await h.transition(claimed, 'w2', 'running'), undefined);
        assert.equal(await h.transition(claimed, 'w2', 'failed', { error: AMBIGUOUS }), undefined);
        assert.equal(await h.transition(claimed, 'w1', 'running', {}, ['running']), undefined);
        assert.equal(
          await h.transition(claimed, 'w1', 'cancelled', {}, ['cancel_requested', 'running']),
          undefined,
        );
        same(await h.get(op.operationId), claimed);
        const started = defined(await attempt(h, claimed, 'w1', ['accepted']), 'startAttempt');
        h.advance(LEASE_MS);
        const late = await h.transition(started, 'w1', 'succeeded', {
          resourceId: 'dep-late',
          expiresAt: h.now + DAY,
          releaseLease: true,
        });
        assert.equal(late, undefined, 'an expired lease, even if nobody took over');
        same(await h.get(op.operationId), started);
      },
    ],
    [
      'transition: never changes a terminal state, even for the lease holder; neither do requestCancel and resolve',
      async (h) => {
        for (const state of TERMINAL) {
          const op = await h.finalOp(state, `deploy-${state}`, false);
          assert.equal(op.leaseOwner, 'w1', state);
          for (const to of OPERATION_STATES)
            await rejectsWithCode(h.transition(op, 'w1', to), 'invalid_argument', `${state} -> ${to}`);
          same(await requestCancel(h.store.ledger, op.operationId, h.now), op, state);
          await rejectsWithCode(
            resolveAs(h, op, { to: 'failed', by: 'oncall', reason: 'x' }),
            'invalid_argument',
            state,
          );
          same(await h.get(op.operationId), op, state);
        }
      },
    ],
    [
      'transition: a worker never moves outcome_unknown',
      async (h) => {
        const op = await h.finalOp('outcome_unknown', 'deploy-1', false);
        assert.equal(op.leaseOwner, 'w1');
        same(op.error, AMBIGUOUS);
        assert.equal(op.expiresAt, undefined);
        for (const to of OPERATION_STATES)
          await rejectsWithCode(h.transition(op, 'w1', to), 'invalid_argument', `outcome_unknown -> ${to}`);
        same(await h.get(op.operationId), op);
      },
    ],
    [
      'transition: running -> running with nextAttemptAt schedules a backoff and releases the lease',
      async (h) => {
        const op = await h.running();
        const waiting = defined(
          await h.transition(op, 'w1', 'running', {
            dispatched: false,
            nextAttemptAt: h.now + 2000,
            releaseLease: true,
          }),
          'backoff',
        );
        matches(waiting, { status: 'running', dispatched: false, attemptCount: 1, leaseOwner: undefined });
        assert.equal(await h.claim('w1'), undefined);
        h.advance(1999);
        assert.equal(await h.claim('w2'), undefined);
        h.advance(1);
        matches(await h.claimOp(op.operationId, 'w2'), { status: 'running', leaseOwner: 'w2' });
        // nextAttemptAt alone releases the lease too.
        const again = defined(
          await h.transition(await h.get(op.operationId), 'w2', 'running', { nextAttemptAt: h.now + 2000 }),
          'backoff',
        );
        assert.equal(again.leaseOwner, undefined);
        h.advance(2000); // well before the 30 s lease would have expired
        assert.equal((await h.claim('w3'))?.operationId, op.operationId);
      },
    ],
  ];
  for (const state of FINAL)
    cases.push([
      `transition: to ${state} closes the open attempt in the same write`,
      async (h) => {
        const op = await h.running(`deploy-${state}-open`, 'w1');
        h.advance(300);
        const patch: OperationPatch =
          state === 'succeeded'
            ? { resourceId: 'dep-1', result: { status: 'succeeded' }, expiresAt: h.now + DAY }
            : state === 'outcome_unknown'
              ? { error: AMBIGUOUS }
              : state === 'failed'
                ? { error: { code: 'internal', message: 'deadline exhausted' }, expiresAt: h.now + DAY }
                : { expiresAt: h.now + DAY };
        const from: OperationState[] = ['running'];
        if (state === 'cancelled') {
          await requestCancel(h.store.ledger, op.operationId, h.now);
          from[0] = 'cancel_requested';
        }
        defined(
          await h.transition(op, 'w1', state, { ...patch, releaseLease: true }, from),
          `transition to ${state}`,
        );
        const attempts = await h.store.ledger.attempts(op.operationId);
        assert.equal(attempts.length, 1);
        matches(attempts[0], { number: 1, endedAt: h.now, outcome: state });
      },
    ]);
  cases.push(
    [
      'transition: one that keeps the operation active, or is refused, leaves the attempt open',
      async (h) => {
        const op = await h.running('deploy-1', 'w1');
        assert.equal(await h.transition(op, 'w2', 'failed', { error: AMBIGUOUS }), undefined);
        await h.transition(op, 'w1', 'running', { nextAttemptAt: h.now + 100 });
        const [open] = await h.store.ledger.attempts(op.operationId);
        assert.equal(open?.endedAt, undefined);
        assert.equal(open?.outcome, undefined);
      },
    ],
    [
      'requestCancel: accepted or running -> cancel_requested, recording when; the worker then settles it',
      async (h) => {
        const run = await h.running('deploy-2');
        const op = await h.accept();
        h.advance(500);
        const cancelling = defined(
          await requestCancel(h.store.ledger, op.operationId, h.now),
          'requestCancel',
        );
        matches(cancelling, {
          operationId: op.operationId,
          status: 'cancel_requested',
          cancelRequestedAt: h.now,
          updatedAt: h.now,
          attemptCount: 0,
        });
        same(await h.get(op.operationId), cancelling);
        const now = h.now;
        const stopping = defined(await requestCancel(h.store.ledger, run.operationId, now), 'requestCancel');
        matches(stopping, {
          status: 'cancel_requested',
          cancelRequestedAt: now,
          dispatched: true,
          attemptCount: 1,
        });
        assert.equal(await h.transition(stopping, 'w1', 'succeeded', {}, ['running']), undefined);
        const settled = defined(
          await h.transition(stopping, 'w1', 'cancelled', { expiresAt: now + DAY, releaseLease: true }),
          'cancel_requested -> cancelled',
        );
        matches(settled, { status: 'cancelled', cancelRequestedAt: now });
      },
    ],
    [
      'requestCancel: leaves cancel_requested and every final state unchanged; undefined for an unknown operation',
      async (h) => {
        const records: OperationRecord[] = [];
        for (const state of FINAL) records.push(await h.finalOp(state));
        const pending = await h.accept('deploy-pending');
        records.push(defined(await requestCancel(h.store.ledger, pending.operationId, h.now), 'cancel'));
        h.advance(1000);
        for (const record of records) {
          same(await requestCancel(h.store.ledger, record.operationId, h.now), record, record.status);
          same(await h.get(record.operationId), record, record.status);
        }
        assert.equal(await requestCancel(h.store.ledger, UNKNOWN_ID, h.now), undefined);
      },
    ],
    ...resolveCases<Tx>(resolveAs),
  );
  return cases;
}

type ResolveAs<Tx> = (
  h: Harness<Tx>,
  op: OperationRecord,
  r: Omit<Resolution, 'now' | 'expiresAt'>,
) => Promise<OperationRecord | undefined>;

function resolveCases<Tx>(resolveAs: ResolveAs<Tx>): Array<Case<Tx>> {
  const cases: Array<Case<Tx>> = [
    [
      'resolve: settles outcome_unknown as succeeded (who, when, resource); lookup then answers the settled result',
      async (h) => {
        const op = await h.finalOp('outcome_unknown');
        // Looked up before: the next lookup reads the resolution, never this answer again.
        sameExisting(await h.store.receipts.lookup(identity('deploy-outcome_unknown')), {
          kind: 'receipt',
          receipt: defined(await h.get(op.operationId), 'the record'),
        });
        h.advance(HOUR);
        const now = h.now;
        const resolved = defined(
          await resolveAs(h, op, { to: 'succeeded', by: 'oncall@example.com', resourceId: 'dep-found' }),
          'resolve',
        );
        matches(resolved, {
          operationId: op.operationId,
          status: 'succeeded',
          resourceId: 'dep-found',
          resolvedBy: 'oncall@example.com',
          resolvedAt: now,
          expiresAt: now + DAY,
          updatedAt: now,
          leaseOwner: undefined,
        });
        assert.equal(resolved.result?.resource_id, 'dep-found');
        same(await h.get(op.operationId), resolved);
        sameExisting(await h.store.receipts.lookup(identity('deploy-outcome_unknown')), {
          kind: 'receipt',
          receipt: resolved,
        });
      },
    ],
    [
      'resolve: settles outcome_unknown as failed, the reason in the error message',
      async (h) => {
        const op = await h.finalOp('outcome_unknown');
        const resolved = defined(
          await resolveAs(h, op, {
            to: 'failed',
            by: 'oncall',
            reason: 'no deployment exists at the provider',
          }),
          'resolve',
        );
        matches(resolved, { status: 'failed', resolvedBy: 'oncall', resolvedAt: h.now });
        assert.match(String(resolved.error?.message), /no deployment exists at the provider/);
        same(await h.get(op.operationId), resolved);
      },
    ],
    [
      'resolve: anything but outcome_unknown is refused with invalid_argument, changing nothing',
      async (h) => {
        const done = await h.finalOp('succeeded');
        const settled = await h.finalOp('outcome_unknown');
        await resolveAs(h, settled, { to: 'failed', by: 'oncall', reason: 'gone' });
        const resolvedOnce = await h.get(settled.operationId);
        const active = await h.running('deploy-running');
        const waiting = await h.accept('deploy-accepted');
        for (const record of [done, resolvedOnce, await h.get(active.operationId), waiting]) {
          for (const to of ['succeeded', 'failed'] as const)
            await rejectsWithCode(
              resolveAs(h, record, { to, by: 'oncall', resourceId: 'dep-other', reason: 'again' }),
              'invalid_argument',
              `${record.status} -> ${to}`,
            );
          same(await h.get(record.operationId), record);
        }
        await rejectsWithCode(resolveAs(h, done, { to: 'succeeded', by: 'oncall' }), 'invalid_argument');
      },
    ],
    [
      'resolve: a resolved success gets the fields given, never overriding status or ids; the audit records it',
      async (h) => {
        const op = await h.finalOp('outcome_unknown');
        const now = h.now;
        const resolved = defined(
          await resolveAs(h, op, {
            to: 'succeeded',
            by: 'oncall',
            resourceId: 'dep-found',
            fields: { deployment_id: 'dep-found', service: 'api', version: '1.4.2', status: 'forged' },
          }),
          'resolve',
        );
        same(resolved.result, {
          status: 'succeeded',
          operation_id: op.operationId,
          resource_id: 'dep-found',
          deployment_id: 'dep-found',
          service: 'api',
          version: '1.4.2',
        });
        same(resolved.audit, [
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
      },
    ],
    [
      'resolve: settling as succeeded without a resource id is refused, changing nothing',
      async (h) => {
        const op = await h.finalOp('outcome_unknown');
        await rejectsWithCode(resolveAs(h, op, { to: 'succeeded', by: 'oncall' }), 'invalid_argument');
        same(await h.get(op.operationId), op);
      },
    ],
  ];
  for (const state of ['failed', 'cancelled'] as const)
    cases.push([
      `resolve: corrects ${state} to succeeded with correct: true, recording who, when, the state before and why`,
      async (h) => {
        const op = await h.finalOp(state);
        // Looked up before: the next lookup reads the correction, never this answer again.
        sameExisting(await h.store.receipts.lookup(identity(`deploy-${state}`)), {
          kind: 'receipt',
          receipt: defined(await h.get(op.operationId), 'the record'),
        });
        h.advance(2 * HOUR);
        const now = h.now;
        const corrected = defined(
          await resolveAs(h, op, {
            to: 'succeeded',
            correct: true,
            by: 'oncall@example.com',
            resourceId: 'dep-found',
            fields: { deployment_id: 'dep-found', service: 'api', version: '1.4.2' },
            reason: 'the provider lists dep-found with our key',
          }),
          'correction',
        );
        matches(corrected, {
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
          error: undefined,
        });
        same(corrected.audit, [
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
        same(await h.get(op.operationId), corrected);
        same(await h.store.ledger.list({ status: 'succeeded' }), [corrected]);
        sameExisting(await h.store.receipts.lookup(identity(`deploy-${state}`)), {
          kind: 'receipt',
          receipt: corrected,
        });
      },
    ]);
  cases.push(
    [
      'resolve: keeps the whole trail (resolved as failed, then corrected to succeeded)',
      async (h) => {
        const op = await h.finalOp('outcome_unknown');
        const first = h.now;
        const failedOnce = defined(
          await resolveAs(h, op, { to: 'failed', by: 'alice', reason: 'not found at the provider' }),
          'resolve',
        );
        h.advance(HOUR);
        const second = h.now;
        const corrected = defined(
          await resolveAs(h, op, {
            to: 'succeeded',
            correct: true,
            by: 'bob',
            resourceId: 'dep-late',
            reason: 'it was listed under another page',
          }),
          'correction',
        );
        same(corrected.audit, [
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
        matches(corrected, { resolvedBy: 'bob', resolvedAt: second, status: 'succeeded' });
        same(await h.get(op.operationId), corrected);
      },
    ],
    [
      'resolve: refuses what is not a correction of failed or cancelled to succeeded with a reason; changes nothing',
      async (h) => {
        const done = await h.finalOp('succeeded');
        const unknown = await h.finalOp('outcome_unknown');
        const failure = await h.finalOp('failed');
        const cancelled = await h.finalOp('cancelled');
        const active = await h.running('deploy-running');
        const waiting = await h.accept('deploy-accepted');
        const correction = (to: 'succeeded' | 'failed', reason: string | null = 'found it') => ({
          to,
          correct: true,
          by: 'oncall',
          resourceId: 'dep-other',
          ...(reason === null ? {} : { reason }),
        });
        const attempts: Array<[OperationRecord, ReturnType<typeof correction>]> = [
          [done, correction('failed')],
          [done, correction('succeeded')],
          [unknown, correction('succeeded')],
          [await h.get(active.operationId), correction('succeeded')],
          [waiting, correction('succeeded')],
          [failure, correction('failed')],
          [cancelled, correction('failed')],
          [failure, correction('succeeded', null)],
          [cancelled, correction('succeeded', '  ')],
        ];
        for (const [record, request] of attempts) {
          await rejectsWithCode(
            resolveAs(h, record, request),
            'invalid_argument',
            `${record.status} -> ${request.to}`,
          );
          same(await h.get(record.operationId), record);
        }
      },
    ],
    [
      'resolve: a plain resolution of failed or cancelled is refused, pointing to a correction',
      async (h) => {
        for (const state of ['failed', 'cancelled'] as const) {
          const op = await h.finalOp(state);
          await assert.rejects(
            resolveAs(h, op, { to: 'succeeded', by: 'oncall', resourceId: 'dep-x' }),
            (error: Error & { code?: string }) => {
              assert.equal(error.code, 'invalid_argument');
              assert.match(error.message, /correct it to succeeded/);
              return true;
            },
          );
          same(await h.get(op.operationId), op);
        }
      },
    ],
    [
      'resolve: of two concurrent corrections exactly one applies',
      async (h) => {
        const op = await h.finalOp('failed');
        const other = await h.another();
        const correctAs = (store: IdemStore<Tx>, by: string) =>
          resolve(store.ledger, op.operationId, {
            to: 'succeeded',
            correct: true,
            by,
            now: h.now,
            resourceId: `dep-${by}`,
            reason: `${by} found it`,
            expiresAt: h.now + DAY,
          });
        const results = await Promise.allSettled([correctAs(h.store, 'alice'), correctAs(other, 'bob')]);
        const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
        assert.equal(refused.length, 1);
        assert.equal((refused[0]?.reason as { code?: string }).code, 'invalid_argument');
        const stored = await h.get(op.operationId);
        assert.equal(stored.audit?.length, 1);
        assert.equal(stored.resourceId, `dep-${stored.resolvedBy}`);
      },
    ],
    [
      'resolve: a success a person settled is corrected only from succeeded; a change decided on another status is refused',
      async (h) => {
        const op = await h.finalOp('failed');
        const settled = defined(
          await resolveAs(h, op, {
            to: 'succeeded',
            correct: true,
            by: 'alice',
            resourceId: 'dep-a',
            reason: 'found',
          }),
          'the first correction',
        );
        // Decided while it was failed (no `from`, or `from: 'failed'`): refused, nothing written.
        for (const from of [undefined, 'failed'] as const) {
          await assert.rejects(
            resolveAs(h, op, {
              to: 'succeeded',
              correct: true,
              by: 'bob',
              resourceId: 'dep-b',
              reason: 'found too',
              ...(from === undefined ? {} : { from }),
            }),
            (error: Error & { code?: string }) => error.code === 'invalid_argument',
          );
          same(await h.get(op.operationId), settled);
        }
        // Decided on the settled success: applies, and the audit keeps the result it replaced.
        const corrected = defined(
          await resolveAs(h, op, {
            to: 'succeeded',
            correct: true,
            from: 'succeeded',
            by: 'bob',
            resourceId: 'dep-b',
            reason: 'alice named the wrong one',
          }),
          'the correction of the settled success',
        );
        assert.equal(corrected.resourceId, 'dep-b');
        assert.equal(corrected.audit?.length, 2);
        assert.deepEqual(corrected.audit?.[1]?.previousResult, settled.result);
      },
    ],
    [
      'resolve: undefined for an unknown operation',
      async (h) => {
        assert.equal(
          await resolve(h.store.ledger, UNKNOWN_ID, {
            to: 'failed',
            by: 'oncall',
            now: h.now,
            reason: 'x',
            expiresAt: h.now + DAY,
          }),
          undefined,
        );
      },
    ],
  );
  return cases;
}
