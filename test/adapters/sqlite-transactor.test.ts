import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { SqliteTransactor } from '../../packages/idem/src/adapters/sqlite/sqlite-transactor.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { Executor } from '../../packages/idem/src/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { recordNoops } from '../helpers/noop-calls.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';
import { watchPragmas } from '../helpers/watch-pragmas.js';

afterEach(removeTempFiles);

function transactor(db: SqliteDatabase): SqliteTransactor {
  return new SqliteTransactor(db, systemClock, 1000, { maxBatch: 64, gather: 'turn' });
}

/** A write that reports the synchronous level its transaction runs at, and its transaction. */
function probe(db: SqliteDatabase, tx: SqliteTransactor, durable: boolean, seen: string[]): Promise<void> {
  return tx.write(
    () => {
      db.exec(`INSERT INTO t VALUES (${durable ? 1 : 0})`);
      const level = Number(db.pragma('synchronous', { simple: true }));
      const rows = (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
      seen.push(`${durable ? 'durable' : 'lazy'}:sync=${level}:rows=${rows}`);
    },
    { durable },
  );
}

describe('SqliteTransactor durable: false', () => {
  it('commits a batch of non-durable writes at NORMAL, and never mixes them with durable ones', async () => {
    const db = openSqlite(tempFile()); // WAL, synchronous=FULL
    db.exec('CREATE TABLE t (durable INTEGER)');
    const tx = transactor(db);
    const seen: string[] = [];
    // Queued in one turn: two lazy writes, a durable one, a lazy one. In order, by kind: three batches.
    await Promise.all([
      probe(db, tx, false, seen),
      probe(db, tx, false, seen),
      probe(db, tx, true, seen),
      probe(db, tx, false, seen),
    ]);
    expect(seen).toEqual([
      'lazy:sync=1:rows=1',
      'lazy:sync=1:rows=2',
      'durable:sync=2:rows=3',
      'lazy:sync=1:rows=4',
    ]);
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // given back after each batch
    const durableWrites = (db.prepare('SELECT count(*) AS n FROM t WHERE durable = 1').get() as { n: number })
      .n;
    expect(durableWrites).toBe(1);
    db.close();
  });

  it('leaves a connection that is not in WAL mode, or already below FULL, as it is', async () => {
    const memory = openSqlite(':memory:');
    memory.exec('CREATE TABLE t (durable INTEGER)');
    const seen: string[] = [];
    await probe(memory, transactor(memory), false, seen);
    expect(seen).toEqual(['lazy:sync=2:rows=1']);
    memory.close();

    const normal = openSqlite(tempFile(), { synchronous: 'NORMAL' });
    normal.exec('CREATE TABLE t (durable INTEGER)');
    const seenNormal: string[] = [];
    await probe(normal, transactor(normal), false, seenNormal);
    expect(seenNormal).toEqual(['lazy:sync=1:rows=1']);
    expect(normal.pragma('synchronous', { simple: true })).toBe(1);
    normal.close();
  });
});

describe('SqliteStore sweep', () => {
  it('commits its batches as non-durable writes (a lost batch is swept again)', async () => {
    const clock = new FakeClock();
    const db = openSqlite(tempFile());
    const pragmas: string[] = [];
    const watched = watchPragmas(db, pragmas);
    const store = new SqliteStore(watched, { clock, checkpoint: 'inline' });
    await recordNoops(new Executor({ store, authorize: () => true, clock }), 5);
    expect(pragmas).not.toContain('synchronous = NORMAL'); // callers' commits stay durable
    clock.advance(2000);
    const swept = await store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs: 60_000, batchSize: 2 });
    expect(swept.tombstoned).toBe(5);
    expect(pragmas.filter((p) => p === 'synchronous = NORMAL')).toHaveLength(swept.batches + 1); // + the empty last batch
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    await store.close();
  });
});
