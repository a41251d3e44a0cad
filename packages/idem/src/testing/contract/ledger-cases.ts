import * as assert from 'node:assert/strict';
import type { OperationRecord } from '../../core/operation-record.js';
import { OPERATION_STATES, type OperationState } from '../../core/operation-state.js';
import { requestCancel, startAttempt } from '../../operations/ledger-transitions.js';
import {
  AMBIGUOUS,
  DAY,
  DEPLOYMENT_ARGS,
  FINAL,
  LEASE_MS,
  YEAR,
  acceptedRecord,
  defined,
  matches,
  receiptRecord,
  same,
  type Harness,
} from './harness.js';
import type { Case } from './receipt-cases.js';

const UNKNOWN_ID = 'op_00000000000000000000000000000000';

/** The ledger: claim, renew, the compare-and-set update, attempts and the queries. */
export function ledgerCases<Tx>(): Array<Case<Tx>> {
  const attempt = (
    h: Harness<Tx>,
    op: OperationRecord,
    workerId: string,
    attemptId: string,
    from: OperationState[],
  ) => startAttempt(h.store.ledger, op.operationId, { workerId, attemptId, now: h.now, from });
  return [
    [
      'ledger.get: an accepted record reads back exactly as written, with no attempts',
      async (h) => {
        const op = await h.accept();
        same(await h.get(op.operationId), op);
        same(await h.store.ledger.attempts(op.operationId), []);
        assert.equal(await h.store.ledger.get(UNKNOWN_ID), undefined);
        same(await h.store.ledger.attempts(UNKNOWN_ID), []);
      },
    ],
    [
      'ledger.get: the traceparent of the accepting call (acceptedTrace) reads back, claimed and started',
      async (h) => {
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        const op = await h.put({ ...acceptedRecord('deploy-traced', h.now), acceptedTrace: traceparent });
        same(await h.get(op.operationId), op);
        matches(await h.claimOp(op.operationId, 'w1'), { acceptedTrace: traceparent });
        const started = defined(await attempt(h, op, 'w1', 'att-traced-1', ['accepted']), 'startAttempt');
        assert.equal(started.acceptedTrace, traceparent);
        assert.equal((await h.get(op.operationId)).acceptedTrace, traceparent);
        // An untraced call stores none.
        const plain = await h.accept('deploy-plain');
        assert.equal((await h.get(plain.operationId)).acceptedTrace, undefined);
      },
    ],
    [
      'ledger.claim: leases a due operation to exactly one worker, not even the holder twice',
      async (h) => {
        const op = await h.accept();
        const now = h.now;
        const claimed = await h.claimOp(op.operationId, 'w1');
        matches(claimed, {
          status: 'accepted',
          kind: 'durable',
          leaseOwner: 'w1',
          leaseExpiresAt: now + LEASE_MS,
          args: DEPLOYMENT_ARGS,
        });
        matches(await h.get(op.operationId), { leaseOwner: 'w1', leaseExpiresAt: now + LEASE_MS });
        assert.equal(await h.claim('w2'), undefined);
        assert.equal(await h.claim('w1'), undefined);
        h.advance(LEASE_MS - 1);
        assert.equal(await h.claim('w2'), undefined);
        assert.equal((await h.get(op.operationId)).leaseOwner, 'w1');
      },
    ],
    [
      'ledger.claim: another worker takes over an expired lease; the old holder is then refused everything',
      async (h) => {
        const op = await h.running('deploy-1', 'w1');
        h.advance(LEASE_MS);
        const taken = await h.claimOp(op.operationId, 'w2');
        matches(taken, {
          status: 'running',
          attemptCount: 1,
          dispatched: true,
          leaseOwner: 'w2',
          leaseExpiresAt: h.now + LEASE_MS,
        });
        const before = await h.get(op.operationId);
        assert.equal(await attempt(h, op, 'w1', 'att-late', ['running']), undefined);
        assert.equal(await h.transition(before, 'w1', 'succeeded', { resourceId: 'dep-x' }), undefined);
        assert.equal(
          await h.store.ledger.renew(op.operationId, {
            workerId: 'w1',
            now: h.now,
            leaseExpiresAt: h.now + LEASE_MS,
          }),
          false,
        );
        same(await h.get(op.operationId), before);
        same(
          (await h.store.ledger.attempts(op.operationId)).map((a) => a.workerId),
          ['w1'],
        );
      },
    ],
    [
      'ledger.claim: one due operation goes to exactly one of many concurrent workers',
      async (h) => {
        const stores = [h.store];
        for (let i = 1; i < 6; i += 1) stores.push(await h.another());
        const op = await h.accept();
        const now = op.createdAt + 1;
        const claims = await Promise.all(
          stores.map((store, i) => store.ledger.claim({ workerId: `w${i}`, now, leaseMs: LEASE_MS })),
        );
        const winners = claims.filter((c): c is OperationRecord => c !== undefined);
        assert.equal(winners.length, 1);
        assert.equal(winners[0]?.operationId, op.operationId);
        assert.equal((await h.get(op.operationId)).leaseOwner, winners[0]?.leaseOwner);
      },
    ],
    [
      'ledger.claim: distinct due operations go to distinct workers, then nothing',
      async (h) => {
        const ids = new Set<string>();
        for (let i = 0; i < 3; i += 1) ids.add((await h.accept(`deploy-${i}`)).operationId);
        const claimed: OperationRecord[] = [];
        for (let i = 0; i < 3; i += 1) claimed.push(defined(await h.claim(`w${i}`), `claim ${i}`));
        same(new Set(claimed.map((c) => c.operationId)), ids);
        same(
          claimed.map((c) => c.leaseOwner),
          ['w0', 'w1', 'w2'],
        );
        assert.equal(await h.claim('w3'), undefined);
      },
    ],
    [
      'ledger.claim: the one due first, ties oldest first',
      async (h) => {
        const t0 = h.now;
        const a = await h.running('deploy-a', 'w1'); // created at t0
        h.advance(10);
        const b = await h.accept('deploy-b'); // created at t0 + 10
        h.advance(10);
        const c = await h.accept('deploy-c'); // created at t0 + 20
        // a waits until t0 + 10, as long as b: due together, a is older.
        await h.transition(a, 'w1', 'running', { nextAttemptAt: t0 + 10, releaseLease: true });
        same(
          [
            (await h.claim('x1'))?.operationId,
            (await h.claim('x2'))?.operationId,
            (await h.claim('x3'))?.operationId,
          ],
          [a.operationId, b.operationId, c.operationId],
        );
        // Due first beats created first: d is older than e but waits longer.
        const d = await h.running('deploy-d', 'w2');
        h.advance(10);
        const e = await h.accept('deploy-e');
        await h.transition(d, 'w2', 'running', { nextAttemptAt: h.now + 5, releaseLease: true });
        h.advance(5);
        same(
          [(await h.claim('y1'))?.operationId, (await h.claim('y2'))?.operationId],
          [e.operationId, d.operationId],
        );
      },
    ],
    [
      'ledger.claim: claims a cancel_requested operation so that a worker can settle it',
      async (h) => {
        const op = await h.accept();
        await requestCancel(h.store.ledger, op.operationId, h.now);
        assert.equal((await h.claimOp(op.operationId, 'w1')).status, 'cancel_requested');
      },
    ],
    [
      'ledger.claim: an operation in backoff is not claimed before its nextAttemptAt; others are',
      async (h) => {
        const op = await h.running('deploy-1', 'w1');
        const retryAt = h.now + 5000;
        const waiting = defined(
          await h.transition(op, 'w1', 'running', { nextAttemptAt: retryAt, releaseLease: true }),
          'backoff transition',
        );
        assert.equal(waiting.status, 'running');
        assert.equal(waiting.leaseOwner, undefined);
        assert.equal(waiting.leaseExpiresAt, undefined);
        const other = await h.accept('deploy-2');
        assert.equal((await h.claim('w2'))?.operationId, other.operationId);
        assert.equal(await h.claim('w3'), undefined);
        h.advance(4999);
        assert.equal(await h.claim('w3'), undefined);
        h.advance(1);
        matches(await h.claimOp(op.operationId, 'w3'), {
          status: 'running',
          attemptCount: 1,
          leaseOwner: 'w3',
        });
      },
    ],
    [
      'ledger.claim: never a final operation, even long after its lease expired',
      async (h) => {
        for (const state of FINAL) {
          await h.finalOp(state, `released-${state}`, true);
          await h.finalOp(state, `held-${state}`, false);
        }
        assert.equal(await h.claim('w2'), undefined);
        h.advance(LEASE_MS);
        assert.equal(await h.claim('w2'), undefined);
        h.advance(YEAR);
        assert.equal(await h.claim('w2'), undefined);
        for (const state of FINAL)
          assert.equal((await h.store.ledger.list({ status: state })).length, 2, state);
      },
    ],
    [
      'ledger.claim: never a local operation (a receipt)',
      async (h) => {
        const note = await h.put(receiptRecord('note-1', h.now));
        assert.equal((await h.get(note.operationId)).kind, 'local');
        assert.equal(await h.claim('w1'), undefined);
        h.advance(YEAR);
        assert.equal(await h.claim('w1'), undefined);
        assert.equal((await h.get(note.operationId)).leaseOwner, undefined);
      },
    ],
    [
      'ledger.claim: closes an attempt its previous holder left open (interrupted, ended at the claim); finishAttempt then overrides it',
      async (h) => {
        const op = await h.running('deploy-1', 'w1');
        h.advance(LEASE_MS);
        const now = h.now;
        await h.claimOp(op.operationId, 'w2');
        const [first, ...more] = await h.store.ledger.attempts(op.operationId);
        same(more, []);
        assert.match(String(first?.detail), /w2/);
        same(first, {
          attemptId: 'att-deploy-1-1',
          operationId: op.operationId,
          number: 1,
          workerId: 'w1',
          startedAt: now - LEASE_MS,
          endedAt: now,
          outcome: 'interrupted',
          detail: first?.detail,
        });
        await h.store.ledger.finishAttempt('att-deploy-1-1', {
          endedAt: now + 1,
          outcome: 'ambiguous',
          detail: 'ambiguous: timeout',
        });
        matches((await h.store.ledger.attempts(op.operationId))[0], {
          endedAt: now + 1,
          outcome: 'ambiguous',
          detail: 'ambiguous: timeout',
        });
      },
    ],
    [
      "ledger.claim: leaves finished attempts, and other operations' attempts, alone",
      async (h) => {
        const op = await h.running('deploy-1', 'w1');
        await h.store.ledger.finishAttempt('att-deploy-1-1', {
          endedAt: h.now,
          outcome: 'retryable_failure',
          detail: 'throttled (HTTP 503)',
        });
        await h.transition(op, 'w1', 'running', { nextAttemptAt: h.now + 100, releaseLease: true });
        const finished = await h.store.ledger.attempts(op.operationId);
        const other = await h.accept('deploy-2');
        await h.claimOp(other.operationId, 'w2');
        defined(await attempt(h, other, 'w2', 'att-deploy-2-1', ['accepted']), 'startAttempt');
        h.advance(100);
        await h.claimOp(op.operationId, 'w3');
        same(await h.store.ledger.attempts(op.operationId), finished);
        assert.equal((await h.store.ledger.attempts(other.operationId))[0]?.endedAt, undefined);
      },
    ],
    [
      'ledger.renew: extends the lease for its unexpired holder only',
      async (h) => {
        const op = await h.accept();
        const start = h.now;
        await h.claimOp(op.operationId, 'w1');
        const renew = (workerId: string, leaseExpiresAt: number) =>
          h.store.ledger.renew(op.operationId, { workerId, now: h.now, leaseExpiresAt });
        assert.equal(await renew('w2', start + 10 * LEASE_MS), false);
        assert.equal((await h.get(op.operationId)).leaseExpiresAt, start + LEASE_MS);
        h.advance(LEASE_MS / 2);
        assert.equal(await renew('w1', start + 2 * LEASE_MS), true);
        matches(await h.get(op.operationId), { leaseOwner: 'w1', leaseExpiresAt: start + 2 * LEASE_MS });
        h.advance(LEASE_MS / 2); // past the original lease
        assert.equal(await h.claim('w2'), undefined);
        h.advance(LEASE_MS); // past the renewed lease: expired, not renewed any more
        assert.equal(await renew('w1', h.now + LEASE_MS), false);
        assert.equal((await h.get(op.operationId)).leaseExpiresAt, start + 2 * LEASE_MS);
        assert.equal((await h.claim('w2'))?.operationId, op.operationId);
        assert.equal(
          await h.store.ledger.renew(UNKNOWN_ID, { workerId: 'w2', now: h.now, leaseExpiresAt: h.now + 1 }),
          false,
        );
      },
    ],
    [
      'ledger.update: decide sees the current record; undefined writes nothing; an unknown operation is not decided',
      async (h) => {
        const op = await h.accept();
        let seen: OperationRecord | undefined;
        same(
          await h.store.ledger.update(op.operationId, (current) => {
            seen = current;
            return undefined;
          }),
          { record: op, written: false },
        );
        same(seen, op);
        same(await h.get(op.operationId), op);
        let decided = false;
        same(
          await h.store.ledger.update(UNKNOWN_ID, () => {
            decided = true;
            return undefined;
          }),
          { record: undefined, written: false },
        );
        assert.equal(decided, false);
        const written = await h.store.ledger.update(op.operationId, () => ({
          change: { updatedAt: op.updatedAt + 5, resourceId: 'dep-5' },
        }));
        same(written, { record: { ...op, updatedAt: op.updatedAt + 5, resourceId: 'dep-5' }, written: true });
        same(await h.get(op.operationId), written.record);
      },
    ],
    [
      'ledger.update: a decide that throws writes nothing, and its error comes out unchanged',
      async (h) => {
        const op = await h.running();
        const attemptsBefore = await h.store.ledger.attempts(op.operationId);
        const boom = new Error('refused');
        await assert.rejects(
          h.store.ledger.update(op.operationId, () => {
            throw boom;
          }),
          (error) => error === boom,
        );
        same(await h.get(op.operationId), op);
        same(await h.store.ledger.attempts(op.operationId), attemptsBefore);
      },
    ],
    [
      'ledger.update: concurrent updates of one operation lose no write (compare-and-set)',
      async (h) => {
        const op = await h.accept();
        const stores = [h.store, await h.another()];
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            stores[i % stores.length]?.ledger.update(op.operationId, (current) => ({
              change: { attemptCount: current.attemptCount + 1, updatedAt: current.updatedAt + 1 },
            })),
          ),
        );
        matches(await h.get(op.operationId), { attemptCount: 12, updatedAt: op.updatedAt + 12 });
      },
    ],
    [
      'ledger.update: startAttempt inserts the attempt numbered attemptCount; closeOpenAttempts closes the open ones',
      async (h) => {
        const op = await h.accept();
        await h.store.ledger.update(op.operationId, () => ({
          change: { attemptCount: 1 },
          startAttempt: { attemptId: 'att-1', workerId: 'w1', startedAt: h.now },
        }));
        await h.store.ledger.update(op.operationId, () => ({
          change: { attemptCount: 2 },
          startAttempt: { attemptId: 'att-2', workerId: 'w2', startedAt: h.now + 1 },
        }));
        await h.store.ledger.finishAttempt('att-1', { endedAt: h.now + 2, outcome: 'retryable_failure' });
        await h.store.ledger.update(op.operationId, () => ({
          change: { status: 'failed', expiresAt: h.now + DAY, error: AMBIGUOUS },
          closeOpenAttempts: { outcome: 'failed', detail: 'closed with the record', at: h.now + 3 },
        }));
        same(await h.store.ledger.attempts(op.operationId), [
          {
            attemptId: 'att-1',
            operationId: op.operationId,
            number: 1,
            workerId: 'w1',
            startedAt: h.now,
            endedAt: h.now + 2,
            outcome: 'retryable_failure',
          },
          {
            attemptId: 'att-2',
            operationId: op.operationId,
            number: 2,
            workerId: 'w2',
            startedAt: h.now + 1,
            endedAt: h.now + 3,
            outcome: 'failed',
            detail: 'closed with the record',
          },
        ]);
      },
    ],
    [
      'ledger.list: newest first, at most limit, filtered by status',
      async (h) => {
        const ids: string[] = [];
        for (let i = 0; i < 4; i += 1) {
          ids.push((await h.accept(`deploy-${i}`)).operationId);
          h.advance(10);
        }
        await requestCancel(h.store.ledger, ids[1] ?? '', h.now);
        same(
          (await h.store.ledger.list()).map((r) => r.operationId),
          [...ids].reverse(),
        );
        same(
          (await h.store.ledger.list({ limit: 2 })).map((r) => r.operationId),
          [ids[3], ids[2]],
        );
        same(
          (await h.store.ledger.list({ status: 'accepted' })).map((r) => r.operationId),
          [ids[3], ids[2], ids[0]],
        );
        same(
          (await h.store.ledger.list({ status: 'accepted', limit: 1 })).map((r) => r.operationId),
          [ids[3]],
        );
        same(
          (await h.store.ledger.list({ status: 'cancel_requested' })).map((r) => r.operationId),
          [ids[1]],
        );
        same(await h.store.ledger.list({ status: 'succeeded' }), []);
        const many = Array.from({ length: 101 }, (_, i) => acceptedRecord(`bulk-${i}`, h.now));
        for (const record of many) await h.put(record);
        assert.equal((await h.store.ledger.list()).length, 100, 'the default limit is 100');
      },
    ],
    [
      'ledger.list: filters by tool, workspace, principal and time; pages with a cursor, either order; countByState',
      async (h) => {
        const t0 = h.now;
        const records = Array.from({ length: 7 }, (_, i) => {
          const base = acceptedRecord(`page-${i}`, t0 + (i < 5 ? i : 4) * 10);
          return {
            ...base,
            identity: {
              ...base.identity,
              workspace: i % 2 === 0 ? 'ws-even' : 'ws-odd',
              principal: i === 6 ? 'bob' : base.identity.principal,
            },
          };
        });
        for (const record of records) await h.put(record);
        const ids = (list: readonly { operationId: string }[]) => list.map((r) => r.operationId);
        const all = await h.store.ledger.list();
        assert.equal(all.length, 7);
        // Total order: operation id (which begins with the creation time), newest first.
        for (let i = 1; i < all.length; i += 1) {
          const [a, b] = [all[i - 1], all[i]] as [OperationRecord, OperationRecord];
          assert.ok(a.operationId > b.operationId && a.createdAt >= b.createdAt);
        }
        const pages: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await h.store.ledger.list({ limit: 3, ...(after === undefined ? {} : { after }) });
          pages.push(...ids(page));
          const last = page.at(-1);
          if (page.length < 3 || last === undefined) break;
          after = last.operationId;
        }
        same(pages, ids(all), 'keyset pages, newest first');
        const oldest = await h.store.ledger.list({ order: 'oldest', status: 'accepted', limit: 2 });
        same(ids(oldest), ids(all).reverse().slice(0, 2), 'oldest first');
        const last = oldest.at(-1) as OperationRecord;
        same(
          ids(
            await h.store.ledger.list({
              order: 'oldest',
              after: last.operationId,
            }),
          ),
          ids(all).reverse().slice(2),
          'oldest first, after a cursor',
        );
        same(
          ids(await h.store.ledger.list({ workspace: 'ws-odd' })),
          ids(all.filter((r) => r.identity.workspace === 'ws-odd')),
        );
        same(ids(await h.store.ledger.list({ principal: 'bob' })), [records[6]?.operationId]);
        same(ids(await h.store.ledger.list({ operation: 'nothing_like_it' })), []);
        same(
          ids(
            await h.store.ledger.list({
              operation: records[0]?.identity.operation,
              createdFrom: t0 + 10,
              createdBefore: t0 + 30,
            }),
          ),
          ids(all.filter((r) => r.createdAt >= t0 + 10 && r.createdAt < t0 + 30)),
          'a time window',
        );
        await requestCancel(h.store.ledger, records[0]?.operationId ?? '', h.now);
        same(await h.store.ledger.countByState(), { accepted: 6, cancel_requested: 1 });
        await h.put(receiptRecord('final-1', h.now));
        same(await h.store.ledger.countByState({ open: true }), { accepted: 6, cancel_requested: 1 });
        same(await h.store.ledger.countByState(), { accepted: 6, cancel_requested: 1, succeeded: 1 });
      },
    ],
    [
      'ledger.get and list({ status }) see every state',
      async (h) => {
        const byState = new Map<OperationState, string>();
        for (const state of FINAL) byState.set(state, (await h.finalOp(state)).operationId);
        byState.set('running', (await h.running('deploy-running')).operationId);
        const cancelling = await h.accept('deploy-cancel');
        await requestCancel(h.store.ledger, cancelling.operationId, h.now);
        byState.set('cancel_requested', cancelling.operationId);
        byState.set('accepted', (await h.accept('deploy-accepted')).operationId);
        same([...byState.keys()].sort(), [...OPERATION_STATES].sort());
        for (const [state, id] of byState) {
          const record = await h.get(id);
          assert.equal(record.status, state);
          const listed = await h.store.ledger.list({ status: state });
          same(
            listed.map((r) => r.operationId),
            [id],
            state,
          );
          same(listed[0], record, state);
        }
        assert.equal((await h.store.ledger.list()).length, OPERATION_STATES.length);
      },
    ],
    [
      'ledger.attempts and finishAttempt: end, outcome and detail recorded; attempts by number',
      async (h) => {
        const op = await h.running('deploy-1', 'w1');
        const attemptId = defined(
          (await h.store.ledger.attempts(op.operationId))[0],
          'the first attempt',
        ).attemptId;
        h.advance(700);
        await h.store.ledger.finishAttempt(attemptId, {
          endedAt: h.now,
          outcome: 'retryable_failure',
          detail: 'provider answered 503',
        });
        same(await h.store.ledger.attempts(op.operationId), [
          {
            attemptId,
            operationId: op.operationId,
            number: 1,
            workerId: 'w1',
            startedAt: h.now - 700,
            endedAt: h.now,
            outcome: 'retryable_failure',
            detail: 'provider answered 503',
          },
        ]);
        await h.transition(op, 'w1', 'running', { nextAttemptAt: h.now + 100, releaseLease: true });
        h.advance(100);
        await h.claimOp(op.operationId, 'w2');
        const second = defined(await attempt(h, op, 'w2', 'att-2', ['running']), 'second attempt');
        matches(second, { status: 'running', attemptCount: 2, dispatched: true });
        await h.store.ledger.finishAttempt('att-2', { endedAt: h.now, outcome: 'succeeded' });
        const attempts = await h.store.ledger.attempts(op.operationId);
        same(
          attempts.map((a) => [a.number, a.workerId, a.outcome]),
          [
            [1, 'w1', 'retryable_failure'],
            [2, 'w2', 'succeeded'],
          ],
        );
        assert.equal(attempts[1]?.detail, undefined);
        assert.equal(attempts[1]?.endedAt, h.now);
      },
    ],
  ];
}
