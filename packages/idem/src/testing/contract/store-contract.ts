import * as assert from 'node:assert/strict';
import { catalogCases } from './catalog-cases.js';
import { Harness, identity, LEASE_MS, type ContractCase, type StoreContractFactory } from './harness.js';
import { housekeepingCases } from './housekeeping-cases.js';
import { ledgerCases } from './ledger-cases.js';
import { outboxCases } from './outbox-cases.js';
import { receiptCases, type Case } from './receipt-cases.js';
import { transitionCases } from './transition-cases.js';
import { versionCases } from './version-cases.js';

export type { ContractCase, ContractStore, StoreContractFactory } from './harness.js';

/**
 * The contract every store must keep, as plain cases: each opens a fresh store from `factory`,
 * drives it through the port API only (receipts, ledger, outbox, housekeeping, tools, sessions) and throws an
 * `AssertionError` (node:assert) when the store breaks a MUST. Run them from any framework:
 * `for (const c of storeContract(factory)) test(c.name, c.run)`.
 */
export function storeContract<Tx>(factory: StoreContractFactory<Tx>): ContractCase[] {
  const cases: Array<Case<Tx>> = [
    ...receiptCases(factory),
    ...versionCases(factory),
    abortCase<Tx>(),
    ...ledgerCases<Tx>(),
    ...transitionCases<Tx>(),
    ...outboxCases<Tx>(),
    ...housekeepingCases<Tx>(),
    ...catalogCases<Tx>(),
  ];
  return cases.map(([name, run]) => ({
    name,
    run: async () => {
      const h = await Harness.open(factory);
      try {
        await run(h);
      } finally {
        await h.close();
      }
    },
  }));
}

function abortCase<Tx>(): Case<Tx> {
  return [
    "every port method rejects with the signal's reason when the signal is already aborted, and starts nothing",
    async (h) => {
      const op = await h.accept();
      const before = await h.get(op.operationId);
      const reason = new Error('the caller gave up');
      const controller = new AbortController();
      controller.abort(reason);
      const signal = controller.signal;
      let started = false;
      const calls: Record<string, () => Promise<unknown>> = {
        'receipts.lookup': () => h.store.receipts.lookup(identity('x'), { signal }),
        'receipts.transaction': () =>
          h.store.receipts.transaction(
            identity('x'),
            () => {
              started = true;
            },
            { signal },
          ),
        'ledger.get': () => h.store.ledger.get(op.operationId, { signal }),
        'ledger.list': () => h.store.ledger.list({ signal }),
        'ledger.list (filtered)': () => h.store.ledger.list({ signal, workspace: 'w', order: 'oldest' }),
        'ledger.countByState': () => h.store.ledger.countByState({ signal }),
        'ledger.attempts': () => h.store.ledger.attempts(op.operationId, { signal }),
        'ledger.claim': () => h.store.ledger.claim({ workerId: 'w1', now: h.now, leaseMs: LEASE_MS, signal }),
        'ledger.renew': () =>
          h.store.ledger.renew(op.operationId, {
            workerId: 'w1',
            now: h.now,
            leaseExpiresAt: h.now + 1,
            signal,
          }),
        'ledger.update': () =>
          h.store.ledger.update(
            op.operationId,
            () => {
              started = true;
              return { change: { updatedAt: h.now + 1 } };
            },
            { signal },
          ),
        'ledger.finishAttempt': () =>
          h.store.ledger.finishAttempt('att-x', { endedAt: h.now, outcome: 'x', signal }),
        'outbox.claim': () =>
          h.store.outbox.claim({ workerId: 'd1', now: h.now, leaseMs: LEASE_MS, limit: 1, signal }),
        'outbox.settle': () => h.store.outbox.settle(1, 'd1', { kind: 'delivered', at: h.now }, { signal }),
        'outbox.deadLetters': () => h.store.outbox.deadLetters({ signal }),
        'outbox.requeue': () => h.store.outbox.requeue(1, h.now, { signal }),
        'housekeeping.sweep': () =>
          h.store.housekeeping.sweep({ now: h.now, tombstoneTtlMs: 1, batchSize: 1, signal }),
        'tools.declare': () =>
          h.store.tools.declare(
            { operation: 'x', version: 1, resultSchema: null, declaredAt: h.now },
            { signal },
          ),
        'tools.get': () => h.store.tools.get('x', 1, { signal }),
        'sessions.put': () =>
          h.store.sessions.put(
            { id: 's', principal: 'p', csrf: 'c', credential: 'dev', createdAt: h.now, expiresAt: h.now + 1 },
            { signal },
          ),
        'sessions.get': () => h.store.sessions.get('s', h.now, { signal }),
        'sessions.delete': () => h.store.sessions.delete('s', { signal }),
      };
      for (const [name, call] of Object.entries(calls))
        await assert.rejects(call(), (error) => error === reason, `${name} rejects with signal.reason`);
      assert.equal(started, false, 'no body or decide ran');
      assert.deepEqual(await h.get(op.operationId), before);
      assert.equal(
        await h.claim('w1').then((c) => c?.operationId),
        op.operationId,
        'the claim did not happen',
      );
    },
  ];
}
