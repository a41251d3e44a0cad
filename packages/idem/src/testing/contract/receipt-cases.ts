import * as assert from 'node:assert/strict';
import type { OutboxMessage } from '../../core/operation-record.js';
import type { Existing } from '../../core/receipt.js';
import { step, type Steps } from '../../core/steps.js';
import { ReceiptRace, type OutboxIntent } from '../../ports/receipt-store.js';
import {
  DAY,
  HOUR,
  LEASE_MS,
  identity,
  receiptRecord,
  same,
  sameExisting,
  turn,
  type Harness,
  type StoreContractFactory,
  assertSerialized,
} from './harness.js';

export type Case<Tx> = readonly [name: string, run: (h: Harness<Tx>) => Promise<void>];

const DESTINATION = 'webhook:notes';

export function intent(dedupKey: string, payload = { dedup: dedupKey }): OutboxIntent {
  return { destination: DESTINATION, dedupKey, payload };
}

function isThenable(value: unknown): boolean {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** A receipt transaction as the executor runs one: find, effect (a row, messages), put. */
export function* commitReceipt<Tx>(
  h: Harness<Tx>,
  tx: Parameters<Parameters<Harness<Tx>['transact']>[1]>[0],
  key: string,
  intents: readonly OutboxIntent[] = [],
  retentionMs = DAY,
): Steps<Existing | undefined> {
  const existing = yield* step(tx.find());
  if (existing !== undefined) return existing;
  yield* h.writeRow(tx, `row-${key}`);
  for (const i of intents) yield* step(tx.enqueue(i));
  yield* step(tx.put(receiptRecord(key, h.now, retentionMs), existing));
  return undefined;
}

export function claimMessages<Tx>(h: Harness<Tx>, workerId: string, limit = 10): Promise<OutboxMessage[]> {
  return h.store.outbox.claim({ workerId, now: h.now, leaseMs: LEASE_MS, limit });
}

/** Receipts: lookup, and the one transaction that holds the identity's lock. */
export function receiptCases<Tx>(factory: StoreContractFactory<Tx>): Array<Case<Tx>> {
  const cases: Array<Case<Tx>> = [
    [
      'capabilities: receipts declare what the store declares, and optimisticInsert is as the factory says',
      async (h) => {
        const { capabilities } = h.store;
        assert.equal(typeof capabilities.engine, 'string');
        assert.equal(h.store.receipts.capabilities.synchronous, capabilities.synchronous);
        assert.equal(h.store.receipts.capabilities.optimisticInsert, capabilities.optimisticInsert);
        assert.equal(capabilities.optimisticInsert, factory.optimisticInsert === true);
        for (const flag of ['multiProcess', 'durable'] as const)
          assert.equal(typeof capabilities[flag], 'boolean');
      },
    ],
    [
      'receipts.transaction: a committed body makes record, application row and message visible together',
      async (h) => {
        const now = h.now;
        const key = 'note-1';
        const record = receiptRecord(key, now);
        const answer = await h.transact(key, function* (tx) {
          const existing = yield* step(tx.find());
          assert.equal(existing, undefined);
          yield* h.writeRow(tx, 'row-1');
          const enqueued = tx.enqueue(intent('msg-1'));
          if (h.store.capabilities.synchronous)
            assert.ok(!isThenable(enqueued), 'a synchronous enqueue returns a value');
          yield* step(enqueued);
          const put = tx.put(record, existing);
          if (h.store.capabilities.synchronous)
            assert.ok(!isThenable(put), 'a synchronous put returns a value');
          yield* step(put);
          // The transaction sees its own record.
          const mine = yield* step(tx.find());
          assert.equal(mine?.kind, 'receipt');
          return 'answer';
        });
        assert.equal(answer, 'answer', 'the body result is the transaction result');
        sameExisting(await h.store.receipts.lookup(identity(key)), { kind: 'receipt', receipt: record });
        same(await h.store.ledger.get(record.operationId), record);
        assert.equal(await h.t.countRows(), 1);
        const messages = await claimMessages(h, 'd1');
        assert.equal(messages.length, 1);
        assert.equal(typeof messages[0]?.id, 'number');
        same(messages, [
          {
            id: messages[0]?.id,
            dedupKey: 'msg-1',
            destination: DESTINATION,
            payload: { dedup: 'msg-1' },
            createdAt: now,
            attempts: 1,
          },
        ]);
      },
    ],
    [
      "receipts.lookup: sees committed data only, never a running transaction's record",
      async (h) => {
        const key = 'note-1';
        const other = await h.another();
        const seenInside: Array<Promise<Existing | undefined>> = [];
        const boom = new Error('the effect failed after the record was written');
        await assert.rejects(
          h.transact(key, function* (tx) {
            yield* step(tx.put(receiptRecord(key, h.now), undefined));
            // A synchronous body runs within one tick: nothing but the body itself could look meanwhile
            // (and a lookup on its own connection would read its own transaction), so only
            // asynchronous stores are asked during the body.
            if (!h.store.capabilities.synchronous) {
              seenInside.push(h.store.receipts.lookup(identity(key)), other.receipts.lookup(identity(key)));
              for (const seen of seenInside)
                assert.equal(yield* step(seen), undefined, 'lookup during the body');
            }
            throw boom;
          }),
          (error) => error === boom,
        );
        for (const seen of seenInside) assert.equal(await seen, undefined, 'lookup started during the body');
        assert.equal(await h.store.receipts.lookup(identity(key)), undefined);
        assert.equal(await other.receipts.lookup(identity(key)), undefined);
      },
    ],
    [
      'receipts.transaction: a throw rolls back record, outbox messages and application row, and rethrows it unchanged',
      async (h) => {
        const key = 'note-1';
        const boom = new Error('downstream exploded');
        let ran = 0;
        await assert.rejects(
          h.transact(key, function* (tx) {
            ran += 1;
            yield* commitReceipt(h, tx, key, [intent('msg-1'), intent('msg-2')]);
            throw boom;
          }),
          (error) => error === boom,
        );
        assert.ok(ran >= 1);
        assert.equal(await h.store.receipts.lookup(identity(key)), undefined);
        same(await h.store.ledger.list(), []);
        assert.equal(await h.t.countRows(), 0);
        same(await claimMessages(h, 'd1'), []);
        h.advance(365 * DAY);
        same(await claimMessages(h, 'd1'), []);

        // A retry commits everything, once.
        await h.transact(key, (tx) => commitReceipt(h, tx, key, [intent('msg-1')]));
        assert.equal(await h.t.countRows(), 1);
        assert.equal((await h.store.receipts.lookup(identity(key)))?.kind, 'receipt');
        same(
          (await claimMessages(h, 'd1')).map((m) => [m.dedupKey, m.attempts]),
          [['msg-1', 1]],
        );
      },
    ],
    [
      'receipts.transaction: concurrent transactions with one identity never interleave, and exactly one finds nothing',
      async (h) => {
        const key = 'note-1';
        const stores = [h.store, await h.another(), h.store, await h.another()];
        const events: string[] = [];
        const found = await Promise.all(
          stores.map((store, i) =>
            h.transact(
              key,
              function* (tx) {
                events.push(`enter ${i}`);
                const existing = yield* step(tx.find());
                if (!store.capabilities.synchronous) for (let n = 0; n < 3; n += 1) yield* step(turn());
                if (existing === undefined) {
                  yield* h.writeRow(tx, `row-${i}`);
                  yield* step(tx.put(receiptRecord(key, h.now), existing));
                }
                events.push(`exit ${i}`);
                return existing;
              },
              store,
            ),
          ),
        );
        assert.equal(events.length, 2 * stores.length);
        assertSerialized(events, found);
        for (const e of found) if (e !== undefined) assert.equal(e.kind, 'receipt');
        assert.equal(await h.t.countRows(), 1);
        assert.equal((await h.store.ledger.list()).length, 1);
      },
    ],
    [
      'receipts.transaction: concurrent transactions with different identities all commit',
      async (h) => {
        const other = await h.another();
        const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
        await Promise.all(
          keys.map((key, i) =>
            h.transact(
              key,
              function* (tx) {
                const existing = yield* step(tx.find());
                if (!h.store.capabilities.synchronous) yield* step(turn());
                yield* h.writeRow(tx, `row-${key}`);
                yield* step(tx.enqueue(intent(`msg-${key}`)));
                yield* step(tx.put(receiptRecord(key, h.now), existing));
              },
              i % 2 === 0 ? h.store : other,
            ),
          ),
        );
        assert.equal(await h.t.countRows(), keys.length);
        for (const key of keys)
          assert.equal((await h.store.receipts.lookup(identity(key)))?.kind, 'receipt', key);
        same(
          (await claimMessages(h, 'd1')).map((m) => m.dedupKey).sort(),
          keys.map((k) => `msg-${k}`),
        );
      },
    ],
    [
      'receipts.lookup: lookups sent at once each answer what a lookup alone answers, and an abort ends only its own',
      async (h) => {
        const kept = await h.put(receiptRecord('note-1', h.now, DAY));
        await h.put(receiptRecord('note-2', h.now, HOUR));
        h.advance(HOUR);
        await h.store.housekeeping.sweep({ now: h.now, tombstoneTtlMs: DAY, batchSize: 10 });
        // A record, a tombstone, nothing, the key of a record at another version, a repeat.
        const asked = [identity('note-1'), identity('note-2'), identity('absent'), identity('note-1', 2)];
        asked.push(identity('note-2'));
        const reason = new Error('this caller gave up');
        const controller = new AbortController();
        const together = asked.map((id) => h.store.receipts.lookup(id));
        const aborted = h.store.receipts.lookup(identity('note-1'), { signal: controller.signal });
        controller.abort(reason);
        // Aborted after it was sent: rejected with the reason, or (a store that had answered
        // already) the answer; never another caller's outcome.
        const mine = await aborted.then(
          (found) => ({ found }),
          (error: unknown) => ({ error }),
        );
        if ('error' in mine) assert.equal(mine.error, reason);
        else sameExisting(mine.found, { kind: 'receipt', receipt: kept });
        const answers = await Promise.all(together);
        for (const [i, id] of asked.entries()) {
          sameExisting(answers[i], await h.store.receipts.lookup(id), `${id.key} at version ${id.version}`);
        }
        sameExisting(answers[0], { kind: 'receipt', receipt: kept });
        sameExisting(answers[3], { kind: 'receipt', receipt: kept }, 'the key at another version');
        assert.equal(answers[1]?.kind, 'tombstone');
        assert.equal(answers[2], undefined);
      },
    ],
    [
      'receipts.transaction: put over a tombstone removes the tombstone in the same transaction',
      async (h) => {
        const key = 'note-1';
        const first = await h.put(receiptRecord(key, h.now, HOUR));
        h.advance(HOUR);
        same(await h.store.housekeeping.sweep({ now: h.now, tombstoneTtlMs: DAY, batchSize: 10 }), {
          tombstoned: 1,
          tombstonesDeleted: 0,
          outboxDeleted: 0,
          batches: 1,
        });
        const tombstone = await h.store.receipts.lookup(identity(key));
        same(tombstone, {
          kind: 'tombstone',
          tombstone: {
            identity: identity(key),
            fingerprint: first.fingerprint,
            receiptExpiredAt: h.now,
            expiresAt: h.now + DAY,
          },
        });
        // A record that never expires (not final) replaces it.
        const again = { ...receiptRecord(key, h.now), kind: 'durable' as const, status: 'accepted' as const };
        delete (again as { expiresAt?: number }).expiresAt;
        const previous = await h.transact(key, function* (tx) {
          const existing = yield* step(tx.find());
          yield* step(tx.put(again, existing));
          return existing;
        });
        sameExisting(previous, tombstone, 'find() returned the tombstone');
        sameExisting(await h.store.receipts.lookup(identity(key)), { kind: 'receipt', receipt: again });
        h.advance(2 * DAY);
        same(await h.store.housekeeping.sweep({ now: h.now, tombstoneTtlMs: DAY, batchSize: 10 }), {
          tombstoned: 0,
          tombstonesDeleted: 0,
          outboxDeleted: 0,
          batches: 0,
        });
      },
    ],
    [
      'receipts.transaction: enqueue records a message once per dedupKey, within a transaction and across them',
      async (h) => {
        await h.transact('key-1', (tx) =>
          commitReceipt(h, tx, 'key-1', [intent('same'), intent('same'), intent('other')]),
        );
        await h.transact('key-2', (tx) =>
          commitReceipt(h, tx, 'key-2', [intent('same', { dedup: 'second' })]),
        );
        // A replay (the receipt is found) writes nothing.
        const replay = await h.transact('key-1', (tx) => commitReceipt(h, tx, 'key-1', [intent('third')]));
        assert.equal(replay?.kind, 'receipt');
        assert.equal(await h.t.countRows(), 2);
        const messages = await claimMessages(h, 'd1');
        same(messages.map((m) => m.dedupKey).sort(), ['other', 'same']);
        same(
          messages.find((m) => m.dedupKey === 'same')?.payload,
          { dedup: 'same' },
          'the first enqueue wins',
        );
        assert.equal(new Set(messages.map((m) => m.id)).size, 2);
        h.advance(LEASE_MS);
        assert.equal((await claimMessages(h, 'd2')).length, 2);
      },
    ],
  ];
  if (factory.optimisticInsert === true) {
    cases.push([
      "receipts.transaction: put(record, 'absent') inserts where nothing exists, else throws ReceiptRace and writes nothing",
      async (h) => {
        const fresh = receiptRecord('fresh', h.now);
        await h.transact('fresh', function* (tx) {
          yield* step(tx.put(fresh, 'absent'));
        });
        sameExisting(await h.store.receipts.lookup(identity('fresh')), { kind: 'receipt', receipt: fresh });
        const expiring = await h.put(receiptRecord('expiring', h.now, HOUR));
        h.advance(HOUR);
        await h.store.housekeeping.sweep({ now: h.now, tombstoneTtlMs: DAY, batchSize: 10 });
        for (const key of ['fresh', 'expiring']) {
          const before = await h.store.receipts.lookup(identity(key));
          await assert.rejects(
            h.transact(key, function* (tx) {
              yield* h.writeRow(tx, `row-${key}`);
              yield* step(tx.put(receiptRecord(key, h.now), 'absent'));
            }),
            (error) => error instanceof ReceiptRace || (error as Error).name === 'ReceiptRace',
            key,
          );
          sameExisting(await h.store.receipts.lookup(identity(key)), before, key);
        }
        assert.equal(expiring.identity.key, 'expiring');
        assert.equal(await h.t.countRows(), 0);
      },
    ]);
  }
  return cases;
}
