import * as assert from 'node:assert/strict';
import type { Existing } from '../../core/receipt.js';
import { step } from '../../core/steps.js';
import { ReceiptRace } from '../../ports/receipt-store.js';
import {
  assertSerialized,
  DAY,
  HOUR,
  identity,
  receiptRecord,
  same,
  sameExisting,
  turn,
  type StoreContractFactory,
} from './harness.js';
import type { Case } from './receipt-cases.js';

/** Turns every record of the suite past its retention (one HOUR) into a tombstone kept for a DAY. */
const SWEEP = { tombstoneTtlMs: DAY, batchSize: 10 } as const;

/**
 * One key across versions of its operation: lookups and `find` see a record or tombstone of any
 * version (the identity's own first, else the oldest), one lock covers every version, and an
 * optimistic insert refuses a key another version holds.
 */
export function versionCases<Tx>(factory: StoreContractFactory<Tx>): Array<Case<Tx>> {
  const cases: Array<Case<Tx>> = [
    [
      'versions: lookup and find at version 2 return the record and the tombstone that version 1 left',
      async (h) => {
        const kept = await h.put(receiptRecord('kept', h.now));
        const expiring = await h.put(receiptRecord('expiring', h.now, HOUR));
        h.advance(HOUR);
        await h.store.housekeeping.sweep({ now: h.now, ...SWEEP });
        const tombstone: Existing = {
          kind: 'tombstone',
          tombstone: {
            identity: identity('expiring'),
            fingerprint: expiring.fingerprint,
            receiptExpiredAt: h.now,
            expiresAt: h.now + DAY,
          },
        };
        const record: Existing = { kind: 'receipt', receipt: kept };
        sameExisting(
          await h.store.receipts.lookup(identity('kept', 2)),
          record,
          'lookup of a v1 record at v2',
        );
        same(
          await h.store.receipts.lookup(identity('expiring', 2)),
          tombstone,
          'lookup of a v1 tombstone at v2',
        );
        const other = await h.another();
        sameExisting(await other.receipts.lookup(identity('kept', 2)), record, 'another connection');
        for (const [key, expected] of [
          ['kept', record],
          ['expiring', tombstone],
        ] as const) {
          const found = await h.transact(key, (tx) => step(tx.find()), h.store, 2);
          sameExisting(found, expected, `find at v2 of the v1 ${expected.kind}`);
        }
        assert.equal(await h.store.receipts.lookup(identity('other-key', 2)), undefined);
      },
    ],
    [
      "versions: where several versions hold one key (data written before this rule), the identity's own wins, else the oldest",
      async (h) => {
        // Written in this order on purpose: the oldest version is not the first one written.
        const v3 = await h.put(receiptRecord('k', h.now, DAY, 3));
        const v1 = await h.put(receiptRecord('k', h.now, DAY, 1));
        const expected: ReadonlyArray<readonly [number, string]> = [
          [1, v1.operationId],
          [2, v1.operationId],
          [3, v3.operationId],
          [4, v1.operationId],
        ];
        for (const [version, operationId] of expected) {
          const looked = await h.store.receipts.lookup(identity('k', version));
          assert.equal(
            looked?.kind === 'receipt' && looked.receipt.operationId,
            operationId,
            `lookup v${version}`,
          );
          const found = await h.transact('k', (tx) => step(tx.find()), h.store, version);
          assert.equal(
            found?.kind === 'receipt' && found.receipt.operationId,
            operationId,
            `find v${version}`,
          );
        }
        // Tombstones are chosen by version the same way.
        h.advance(DAY);
        await h.store.housekeeping.sweep({ now: h.now, ...SWEEP });
        const tomb = await h.store.receipts.lookup(identity('k', 2));
        assert.equal(tomb?.kind, 'tombstone');
        assert.equal(
          tomb?.kind === 'tombstone' && tomb.tombstone.identity.version,
          1,
          'the oldest tombstone',
        );
        const own = await h.store.receipts.lookup(identity('k', 3));
        assert.equal(
          own?.kind === 'tombstone' && own.tombstone.identity.version,
          3,
          "the identity's own tombstone",
        );
      },
    ],
    [
      "versions: the identity's own tombstone wins over an older version's record; another version gets the oldest",
      async (h) => {
        // Written in this order on purpose (data from before this rule): v2 expires first.
        const v2 = await h.put(receiptRecord('k', h.now, HOUR, 2));
        const v1 = await h.put(receiptRecord('k', h.now, DAY, 1));
        h.advance(HOUR);
        await h.store.housekeeping.sweep({ now: h.now, ...SWEEP });
        const tombstone: Existing = {
          kind: 'tombstone',
          tombstone: {
            identity: identity('k', 2),
            fingerprint: v2.fingerprint,
            receiptExpiredAt: h.now,
            expiresAt: h.now + DAY,
          },
        };
        const record: Existing = { kind: 'receipt', receipt: v1 };
        for (const [version, expected] of [
          [1, record],
          [2, tombstone],
          [3, record],
        ] as const) {
          sameExisting(await h.store.receipts.lookup(identity('k', version)), expected, `lookup v${version}`);
          const found = await h.transact('k', (tx) => step(tx.find()), h.store, version);
          sameExisting(found, expected, `find v${version}`);
        }
      },
    ],
    [
      'versions: concurrent transactions with one key at versions 1 and 2 never interleave, and exactly one finds nothing',
      async (h) => {
        const key = 'note-1';
        const stores = [h.store, await h.another(), h.store, await h.another()];
        const events: string[] = [];
        const found = await Promise.all(
          stores.map((store, i) => {
            const version = (i % 2) + 1;
            return h.transact(
              key,
              function* (tx) {
                events.push(`enter ${i}`);
                const existing = yield* step(tx.find());
                if (!store.capabilities.synchronous) for (let n = 0; n < 3; n += 1) yield* step(turn());
                if (existing === undefined) {
                  yield* h.writeRow(tx, `row-${i}`);
                  yield* step(tx.put(receiptRecord(key, h.now, DAY, version), existing));
                }
                events.push(`exit ${i}`);
                return existing;
              },
              store,
              version,
            );
          }),
        );
        assertSerialized(events, found);
        assert.equal(await h.t.countRows(), 1, 'one application row');
        assert.equal((await h.store.ledger.list()).length, 1, 'one record');
      },
    ],
    [
      'versions: put over a tombstone of another version removes that tombstone',
      async (h) => {
        await h.put(receiptRecord('k', h.now, HOUR));
        h.advance(HOUR);
        await h.store.housekeeping.sweep({ now: h.now, ...SWEEP });
        // The tombstone's own life ends: the key is free again, and version 2 takes it.
        h.advance(DAY);
        const v2 = receiptRecord('k', h.now, DAY, 2);
        await h.put(v2);
        sameExisting(await h.store.receipts.lookup(identity('k', 1)), { kind: 'receipt', receipt: v2 });
        sameExisting(await h.store.receipts.lookup(identity('k', 2)), { kind: 'receipt', receipt: v2 });
        same(await h.store.housekeeping.sweep({ now: h.now, ...SWEEP }), {
          tombstoned: 0,
          tombstonesDeleted: 0,
          outboxDeleted: 0,
          batches: 0,
        });
      },
    ],
  ];
  if (factory.optimisticInsert === true) {
    cases.push([
      "versions: put(record, 'absent') at version 2 throws ReceiptRace where version 1 holds a record or a tombstone, and writes nothing",
      async (h) => {
        await h.put(receiptRecord('recorded', h.now));
        await h.put(receiptRecord('expiring', h.now, HOUR));
        h.advance(HOUR);
        await h.store.housekeeping.sweep({ now: h.now, ...SWEEP });
        for (const key of ['recorded', 'expiring']) {
          const before = await h.store.receipts.lookup(identity(key));
          await assert.rejects(
            h.transact(
              key,
              function* (tx) {
                yield* h.writeRow(tx, `row-${key}`);
                yield* step(tx.put(receiptRecord(key, h.now, DAY, 2), 'absent'));
              },
              h.store,
              2,
            ),
            (error) => error instanceof ReceiptRace || (error as Error).name === 'ReceiptRace',
            key,
          );
          sameExisting(await h.store.receipts.lookup(identity(key, 2)), before, key);
        }
        assert.equal(await h.t.countRows(), 0);
        assert.equal((await h.store.ledger.list()).length, 1, 'only the v1 record');
      },
    ]);
  }
  return cases;
}
