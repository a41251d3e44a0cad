import { describe, expect, it, onTestFinished } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import type { FaultPoint } from '../../packages/idem/src/core/fault-points.js';
import type { CallOutcome } from '../../packages/idem/src/executor/executor.js';
import { openTestStore, type SqliteTestStore, type TestStoreOptions } from '../helpers/store-fixtures.js';

function open(options?: TestStoreOptions): SqliteTestStore {
  const t = openTestStore(options);
  onTestFinished(() => t.close());
  return t;
}

/** A second connection to the same file: it sees only what was committed. */
function observer(t: SqliteTestStore): SqliteDatabase {
  const db = openSqlite(t.path);
  onTestFinished(() => {
    db.close();
  });
  return db;
}

function count(db: SqliteDatabase, table: string): number {
  return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
}

function call(t: SqliteTestStore, key = 'key-1', operation = t.createNote): Promise<CallOutcome> {
  return t.executor.run(operation, { principal: 'alice', workspace: 'ws-1', key, args: { body: 'b' } });
}

describe('a failure inside the write transaction rolls everything back', () => {
  const points: { point: FaultPoint; notesInside: number; receiptsInside: number }[] = [
    { point: 'after_claim', notesInside: 0, receiptsInside: 0 },
    { point: 'after_effect', notesInside: 1, receiptsInside: 0 },
    { point: 'before_commit', notesInside: 1, receiptsInside: 1 },
  ];

  for (const { point, notesInside, receiptsInside } of points) {
    it(`${point}: no note and no receipt remain, and the retry executes exactly once`, async () => {
      const t = open();
      const other = observer(t);
      const injected = new Error(`crash at ${point}`);
      const seen: { point: FaultPoint; notes: number; receipts: number; committedNotes: number }[] = [];
      t.faults.arm(point, (hit) => {
        // Inside the transaction: what has been written so far, and what another connection sees.
        seen.push({
          point: hit,
          notes: count(t.db, 'notes'),
          receipts: count(t.db, 'idem_operations'),
          committedNotes: count(other, 'notes'),
        });
        throw injected;
      });

      const outcome = await call(t);
      if (outcome.ok) throw new Error('expected the injected failure');
      expect(outcome.error.code).toBe('internal');
      expect(outcome.error.cause).toBe(injected);
      expect(seen).toEqual([{ point, notes: notesInside, receipts: receiptsInside, committedNotes: 0 }]);

      expect(t.db.inTransaction).toBe(false);
      expect(count(t.db, 'notes')).toBe(0);
      expect(count(t.db, 'idem_operations')).toBe(0);
      expect(count(other, 'notes')).toBe(0);
      expect(count(other, 'idem_operations')).toBe(0);

      const retry = await call(t);
      if (!retry.ok) throw new Error(`retry failed: ${retry.error.code}`);
      expect(retry.replayed).toBe(false);
      expect(count(other, 'notes')).toBe(1);
      expect(count(other, 'idem_operations')).toBe(1);
      expect(seen).toHaveLength(1); // armed once: the retry did not hit it
    });
  }

  it('keeps serving other keys on the same store after a rolled-back call', async () => {
    const t = open();
    t.faults.arm('after_effect', () => {
      throw new Error('crash');
    });
    expect((await call(t, 'key-1')).ok).toBe(false);
    const outcomes = await Promise.all([call(t, 'key-2'), call(t, 'key-3')]);
    expect(outcomes.every((o) => o.ok && !o.replayed)).toBe(true);
    expect(await t.countNotes()).toBe(2);
  });

  it('rolls back when the fault is armed for several hits, until the hits are used up', async () => {
    const t = open();
    t.faults.arm(
      'before_commit',
      () => {
        throw new Error('crash');
      },
      2,
    );
    expect((await call(t)).ok).toBe(false);
    expect((await call(t)).ok).toBe(false);
    expect(await t.countNotes()).toBe(0);
    const third = await call(t);
    expect(third.ok && !third.replayed).toBe(true);
    expect(await t.countNotes()).toBe(1);
  });

  it('refuses an asynchronous effect with internal and rolls back what it wrote', async () => {
    const t = open();
    const asyncNote = {
      ...t.createNote,
      effect: async (...args: Parameters<typeof t.createNote.effect>) => t.createNote.effect(...args),
    };
    const outcome = await call(t, 'key-1', asyncNote);
    if (outcome.ok) throw new Error('expected internal');
    expect(outcome.error.code).toBe('internal');
    expect(outcome.error.message).toMatch(/synchronous/);
    expect(await t.countNotes()).toBe(0);
    expect(await t.countReceipts()).toBe(0);
  });
});
