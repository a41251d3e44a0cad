import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import {
  memoryStore,
  storeContract,
  type MemoryTx,
  type StoreContractFactory,
} from '../../packages/idem/src/testing/index.js';

/** A memory store with one port method replaced by a broken one. */
function broken(
  name: string,
  breakIt: (store: IdemStore<MemoryTx>) => IdemStore<MemoryTx>,
): StoreContractFactory<MemoryTx> {
  return {
    name,
    async open({ clock }) {
      const inner = memoryStore({ clock });
      return {
        store: breakIt(inner),
        writeRow: (tx, id) => tx.put('rows', id, { id }),
        countRows: async () => inner.data.list('rows').length,
        close: () => inner.close(),
      };
    },
  };
}

/** Runs the whole suite; answers the names of the cases that failed. */
async function failing(factory: StoreContractFactory<MemoryTx>): Promise<string[]> {
  const failed: string[] = [];
  for (const c of storeContract(factory)) {
    try {
      await c.run();
    } catch {
      failed.push(c.name);
    }
  }
  return failed;
}

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('the port contract suite fails a broken store', () => {
  it('passes the memory store itself (the baseline for the cases below)', async () => {
    expect(await failing(broken('memory', (s) => s))).toEqual([]);
  });

  it('fails a receipts transaction that commits what its body wrote before throwing', async () => {
    const failed = await failing(
      broken('no rollback', (s) => ({
        ...s,
        receipts: {
          ...s.receipts,
          async transaction(identity, body, options) {
            let thrown: { error: unknown } | undefined;
            const result = await s.receipts.transaction(
              identity,
              async (tx) => {
                try {
                  return await body(tx);
                } catch (error) {
                  thrown = { error };
                  return undefined as never;
                }
              },
              options,
            );
            if (thrown !== undefined) throw thrown.error;
            return result;
          },
        },
      })),
    );
    expect(failed).toContain(
      'receipts.transaction: a throw rolls back record, outbox messages and application row, and rethrows it unchanged',
    );
    expect(failed).toContain(
      "receipts.lookup: sees committed data only, never a running transaction's record",
    );
    expect(failed.some((name) => name.startsWith('outbox.'))).toBe(false);
  });

  it('fails a ledger whose update writes when decide answers undefined', async () => {
    const failed = await failing(
      broken('writes on undefined', (s) => ({
        ...s,
        ledger: {
          ...s.ledger,
          update: (id, decide, options) =>
            s.ledger.update(
              id,
              (current) => decide(current) ?? { change: { updatedAt: current.updatedAt + 1 } },
              options,
            ),
        },
      })),
    );
    expect(failed).toContain(
      'ledger.update: decide sees the current record; undefined writes nothing; an unknown operation is not decided',
    );
    expect(failed).toContain(
      'transition: refused (undefined) without the lease, with an expired one, or from another state; nothing changes',
    );
    expect(failed).toContain(
      'requestCancel: leaves cancel_requested and every final state unchanged; undefined for an unknown operation',
    );
    expect(failed.some((name) => name.startsWith('housekeeping.'))).toBe(false);
  });

  it('fails a ledger whose update reads, waits, then writes (lost updates)', async () => {
    const failed = await failing(
      broken('read-modify-write', (s) => ({
        ...s,
        ledger: {
          ...s.ledger,
          async update(id, decide, options) {
            const stale: OperationRecord | undefined = await s.ledger.get(id, options);
            await turn();
            return s.ledger.update(id, (current) => decide(stale ?? current), options);
          },
        },
      })),
    );
    expect(failed).toEqual(
      expect.arrayContaining([
        'ledger.update: concurrent updates of one operation lose no write (compare-and-set)',
        'resolve: of two concurrent corrections exactly one applies',
      ]),
    );
  });

  it('fails a claim that hands out an operation someone already holds', async () => {
    const leases = await failing(
      broken('no lease check', (s) => ({
        ...s,
        ledger: {
          ...s.ledger,
          claim: async (options) =>
            (await s.ledger.claim(options)) ?? (await s.ledger.list({ status: 'accepted', limit: 1 }))[0],
        },
      })),
    );
    expect(leases).toContain(
      'ledger.claim: leases a due operation to exactly one worker, not even the holder twice',
    );
    expect(leases).toContain(
      'ledger.claim: one due operation goes to exactly one of many concurrent workers',
    );
  });
});
