import * as assert from 'node:assert/strict';
import { requestCancel } from '../../operations/ledger-transitions.js';
import type { SweepOptions } from '../../ports/housekeeping.js';
import {
  DAY,
  HOUR,
  YEAR,
  identity,
  matches,
  receiptRecord,
  rejectsWithCode,
  same,
  sameExisting,
  type Harness,
} from './harness.js';
import { claimMessages as claim, commitReceipt, intent, type Case } from './receipt-cases.js';

const NOTHING = { tombstoned: 0, tombstonesDeleted: 0, outboxDeleted: 0, batches: 0 };

function sweep<Tx>(h: Harness<Tx>, options: Partial<SweepOptions> = {}) {
  return h.store.housekeeping.sweep({ now: h.now, tombstoneTtlMs: DAY, batchSize: 10, ...options });
}

async function receipts<Tx>(
  h: Harness<Tx>,
  prefix: string,
  count: number,
  retentionMs = HOUR,
): Promise<void> {
  for (let i = 0; i < count; i += 1) await h.put(receiptRecord(`${prefix}-${i}`, h.now, retentionMs));
}

/** Housekeeping: what expires, and when it goes. */
export function housekeepingCases<Tx>(): Array<Case<Tx>> {
  return [
    [
      'housekeeping.sweep: never touches an unfinished operation, however far in the future',
      async (h) => {
        const marked = await h.running('deploy-marked', 'w2');
        // Even one that was given an expiresAt.
        await h.transition(marked, 'w2', 'running', { expiresAt: h.now + HOUR });
        const unknown = await h.finalOp('outcome_unknown');
        const active = await h.running('deploy-running');
        const cancelling = await h.accept('deploy-cancelling');
        await requestCancel(h.store.ledger, cancelling.operationId, h.now);
        const waiting = await h.accept('deploy-accepted');
        const ids = [unknown, active, cancelling, waiting, marked].map((r) => r.operationId);
        const before = await Promise.all(ids.map((id) => h.get(id)));
        h.advance(10 * YEAR);
        same(await sweep(h), NOTHING);
        same(await Promise.all(ids.map((id) => h.get(id))), before);
        for (const record of before)
          assert.equal((await h.store.receipts.lookup(record.identity))?.kind, 'receipt', record.status);
      },
    ],
    [
      'housekeeping.sweep: a final record past its expiresAt becomes a tombstone, its attempts deleted; not before',
      async (h) => {
        const done = await h.finalOp('succeeded'); // expiresAt = now + DAY
        const pending = await h.accept('deploy-pending');
        assert.equal((await h.store.ledger.attempts(done.operationId)).length, 1);
        h.advance(DAY - 1);
        same(await sweep(h), NOTHING);
        same(await h.get(done.operationId), done);
        h.advance(1);
        matches(await sweep(h, { tombstoneTtlMs: YEAR }), { tombstoned: 1, tombstonesDeleted: 0 });
        assert.equal(await h.store.ledger.get(done.operationId), undefined);
        same(await h.store.ledger.attempts(done.operationId), []);
        same(
          (await h.store.ledger.list()).map((r) => r.operationId),
          [pending.operationId],
        );
        sameExisting(await h.store.receipts.lookup(done.identity), {
          kind: 'tombstone',
          tombstone: {
            identity: done.identity,
            fingerprint: done.fingerprint,
            receiptExpiredAt: h.now,
            expiresAt: h.now + YEAR,
          },
        });
      },
    ],
    [
      'housekeeping.sweep: a tombstone past its expiresAt is deleted, and the key is free',
      async (h) => {
        await h.put(receiptRecord('note-1', h.now, HOUR));
        h.advance(HOUR);
        matches(await sweep(h, { tombstoneTtlMs: HOUR }), { tombstoned: 1, tombstonesDeleted: 0 });
        h.advance(HOUR - 1);
        matches(await sweep(h), NOTHING);
        assert.equal((await h.store.receipts.lookup(identity('note-1')))?.kind, 'tombstone');
        h.advance(1);
        same(await sweep(h), { tombstoned: 0, tombstonesDeleted: 1, outboxDeleted: 0, batches: 1 });
        assert.equal(await h.store.receipts.lookup(identity('note-1')), undefined);
      },
    ],
    [
      'housekeeping.sweep: batches of at most batchSize until nothing is due',
      async (h) => {
        await receipts(h, 'key', 25);
        h.advance(HOUR);
        // The suite's clock does not move inside a batch: every batch takes the whole batchSize.
        same(await sweep(h), { tombstoned: 25, tombstonesDeleted: 0, outboxDeleted: 0, batches: 3 });
        for (let i = 0; i < 25; i += 5)
          assert.equal((await h.store.receipts.lookup(identity(`key-${i}`)))?.kind, 'tombstone');
        same(await sweep(h), NOTHING);
      },
    ],
    [
      'housekeeping.sweep: stops after maxBatches and leaves the rest to later sweeps',
      async (h) => {
        await receipts(h, 'old', 15);
        h.advance(HOUR);
        const live = await h.put(receiptRecord('live', h.now, HOUR));
        same(await sweep(h, { maxBatches: 1 }), {
          tombstoned: 10,
          tombstonesDeleted: 0,
          outboxDeleted: 0,
          batches: 1,
        });
        assert.equal((await h.store.ledger.list()).length, 6);
        const rest = await sweep(h);
        assert.equal(rest.tombstoned, 5);
        same(
          (await h.store.ledger.list()).map((r) => r.operationId),
          [live.operationId],
        );
      },
    ],
    [
      'housekeeping.sweep: with outboxRetentionMs deletes delivered messages that old, in batches; never pending ones or dead letters',
      async (h) => {
        const delivered = ['d-1', 'd-2', 'd-3'];
        await h.transact('key-1', (tx) =>
          commitReceipt(
            h,
            tx,
            'key-1',
            [...delivered, 'late', 'pending', 'dead'].map((k) => intent(k)),
            YEAR,
          ),
        );
        const ids = new Map((await claim(h, 'd1')).map((m) => [m.dedupKey, m.id]));
        const id = (key: string) => ids.get(key) ?? -1;
        for (const key of delivered)
          assert.equal(await h.store.outbox.settle(id(key), 'd1', { kind: 'delivered', at: h.now }), true);
        await h.store.outbox.settle(id('dead'), 'd1', { kind: 'dead', at: h.now, error: 'http_500' });
        await h.store.outbox.settle(id('pending'), 'd1', { kind: 'retry', at: h.now, error: 'http_503' });
        h.advance(1);
        await h.store.outbox.settle(id('late'), 'd1', { kind: 'delivered', at: h.now });
        h.advance(DAY - 1);
        matches(await sweep(h, { outboxRetentionMs: DAY, batchSize: 2 }), { outboxDeleted: 3, batches: 2 });
        assert.equal((await sweep(h, { outboxRetentionMs: DAY })).outboxDeleted, 0);
        h.advance(1);
        assert.equal((await sweep(h, { outboxRetentionMs: DAY })).outboxDeleted, 1);
        same(
          (await h.store.outbox.deadLetters()).map((m) => m.dedupKey),
          ['dead'],
        );
        h.advance(YEAR);
        same(
          (await claim(h, 'd2', 100)).map((m) => m.dedupKey),
          ['pending'],
        );
      },
    ],
    [
      'housekeeping.sweep: keeps delivered messages when no outboxRetentionMs is given',
      async (h) => {
        await h.transact('key-1', (tx) => commitReceipt(h, tx, 'key-1', [intent('note-1')], 10 * YEAR));
        const [message] = await claim(h, 'd1');
        await h.store.outbox.settle(message?.id ?? -1, 'd1', { kind: 'delivered', at: h.now });
        h.advance(YEAR);
        same(await sweep(h), NOTHING);
        assert.equal((await sweep(h, { outboxRetentionMs: DAY })).outboxDeleted, 1);
      },
    ],
    [
      'housekeeping.sweep: maxDuty outside (0, 1] is refused with invalid_argument before any batch',
      async (h) => {
        await receipts(h, 'key', 3);
        h.advance(HOUR);
        for (const maxDuty of [0, -0.5, 1.5, Number.NaN])
          await rejectsWithCode(sweep(h, { maxDuty }), 'invalid_argument', `maxDuty ${maxDuty}`);
        assert.equal((await h.store.ledger.list()).length, 3, 'nothing was swept');
        same(await sweep(h, { maxDuty: 1 }), {
          tombstoned: 3,
          tombstonesDeleted: 0,
          outboxDeleted: 0,
          batches: 1,
        });
      },
    ],
  ];
}
