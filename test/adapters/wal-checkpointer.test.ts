import { copyFileSync, rmSync, statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite, SqliteStore } from '../../packages/idem/src/adapters/sqlite/index.js';
import {
  BACKGROUND_CHECKPOINT_FRAMES,
  BACKSTOP_AUTOCHECKPOINT,
  SWEEP_CHECKPOINTER_AFTER,
} from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { WalCheckpointer } from '../../packages/idem/src/adapters/sqlite/wal-checkpointer.js';
import { Executor } from '../../packages/idem/src/index.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';
import { recordNoops } from '../helpers/noop-calls.js';
import { watchPragmas } from '../helpers/watch-pragmas.js';

const path = (): string => tempFile();
afterEach(removeTempFiles);

/**
 * Rows of `table` in the database file alone, as if the WAL were lost: what checkpoints copied.
 * Copied while a checkpoint writes the file, the copy can be torn; that reads as -1 (look again).
 */
function rowsInDatabaseFile(file: string, table: string): number {
  const copy = `${file}.copy`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true });
  copyFileSync(file, copy);
  let db: ReturnType<typeof openSqlite> | undefined;
  try {
    db = openSqlite(copy);
    const exists = db.prepare('SELECT count(*) AS n FROM sqlite_master WHERE name = ?').get(table) as {
      n: number;
    };
    if (exists.n === 0) return 0;
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } catch (error) {
    // openSqlite reports a torn copy as `unavailable` with the driver's code in its cause; a
    // statement on it throws the driver's own error.
    const failure = error as { code?: string; cause?: { driverCode?: string } };
    const code = failure.cause?.driverCode ?? failure.code;
    if (code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB') return -1;
    throw error;
  } finally {
    db?.close();
  }
}

/** Polls `check` every 5 ms until it holds or `ms` pass (no fixed sleeps: the worker's pace decides). */
async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return check();
}

describe('WalCheckpointer', () => {
  it('copies committed WAL frames into the database file from its own thread', async () => {
    const file = path();
    const db = openSqlite(file);
    db.pragma('wal_autocheckpoint = 0'); // only the worker may checkpoint
    db.exec('CREATE TABLE t (v TEXT)');
    const insert = db.prepare('INSERT INTO t VALUES (?)');
    for (let i = 0; i < 200; i += 1) insert.run(`row ${i}`);
    expect(rowsInDatabaseFile(file, 't')).toBe(0); // all 200 rows are still only in the WAL

    const checkpointer = WalCheckpointer.start(file, { intervalMs: 5 });
    try {
      expect(await eventually(() => rowsInDatabaseFile(file, 't') === 200)).toBe(true);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it('checkpoints once more when stopped, and stopping twice returns the same promise', async () => {
    const file = path();
    const db = openSqlite(file);
    db.pragma('wal_autocheckpoint = 0');
    db.exec('CREATE TABLE t (v TEXT)');
    const insert = db.prepare('INSERT INTO t VALUES (?)');
    for (let i = 0; i < 30; i += 1) insert.run(`row ${i}`);
    // The interval never fires here: only the checkpoint on stop can fill the database file.
    const checkpointer = WalCheckpointer.start(file, { intervalMs: 60_000 });
    const stopping = checkpointer.stop();
    expect(checkpointer.stop()).toBe(stopping);
    await stopping;
    expect(rowsInDatabaseFile(file, 't')).toBe(30);
    db.close();
  });

  it('with minFrames, waits until that many frames are in the WAL', async () => {
    const file = path();
    const db = openSqlite(file);
    db.pragma('wal_autocheckpoint = 0');
    db.exec('CREATE TABLE t (v TEXT)'); // the table's page lives in the WAL until a checkpoint
    const insert = db.prepare('INSERT INTO t VALUES (?)');
    for (let i = 0; i < 30; i += 1) insert.run(`row ${i}`); // about 30 frames, one per commit
    // Only a checkpoint writes the table's page into the database file, which makes it grow.
    // (Not rowsInDatabaseFile: a copy of the file taken after a checkpoint that stopped short of
    // the WAL's end once read as SQLITE_CORRUPT for 5 s under load.)
    const pagesInFile = (): number => statSync(file).size / 4096;
    const before = pagesInFile();
    const checkpointer = WalCheckpointer.start(file, { intervalMs: 5, minFrames: 100 });
    try {
      // Forty ticks or so: below the threshold, none of them checkpoints.
      expect(await eventually(() => pagesInFile() > before, 200)).toBe(false);
      for (let i = 30; i < 150; i += 1) insert.run(`row ${i}`);
      expect(await eventually(() => pagesInFile() > before)).toBe(true);
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });

  it('tells its owner when the worker exits on its own (here: the file is not there)', async () => {
    const checkpointer = WalCheckpointer.start(`${path()}.missing`);
    const exited = await new Promise<boolean>((resolve) => {
      checkpointer.onExit(() => resolve(true));
      setTimeout(() => resolve(false), 5000).unref();
    });
    expect(exited).toBe(true);
  });
});

describe('SqliteStore checkpoint option', () => {
  it("'inline' leaves checkpoints to SQLite: with them off, the file stays behind", async () => {
    const file = path();
    const db = openSqlite(file);
    db.pragma('wal_autocheckpoint = 0');
    const store = new SqliteStore(db, { checkpoint: 'inline' });
    await recordNoops(new Executor({ store, authorize: () => true }), 20);
    expect(await eventually(() => rowsInDatabaseFile(file, 'idem_operations') > 0, 200)).toBe(false);
    await store.close();
  });

  it("'background' checkpoints from a worker once the WAL is long; close() stops it", async () => {
    const file = path();
    const db = openSqlite(file);
    const store = new SqliteStore(db, { checkpoint: 'background' });
    // The connection's own checkpoint is now only a safety net, far behind the worker's threshold.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(BACKSTOP_AUTOCHECKPOINT);
    await recordNoops(new Executor({ store, authorize: () => true }), 50);
    // A few hundred frames: the worker lets them wait, and so does the connection.
    expect(await eventually(() => rowsInDatabaseFile(file, 'idem_operations') > 0, 200)).toBe(false);
    // One transaction of more than BACKGROUND_CHECKPOINT_FRAMES pages puts the WAL past the threshold.
    db.exec('CREATE TABLE filler (b BLOB)');
    db.prepare('INSERT INTO filler VALUES (randomblob(?))').run((BACKGROUND_CHECKPOINT_FRAMES + 100) * 4096);
    expect(await eventually(() => rowsInDatabaseFile(file, 'idem_operations') === 50)).toBe(true);
    await store.close();
    expect(db.open).toBe(false);
  });

  it('defaults to adaptive checkpoints where a COMMIT waits for the disk, background elsewhere', async () => {
    // synchronous=FULL: a lone caller keeps SQLite's own checkpoint (see the adaptive tests below).
    const full = openSqlite(path());
    const adaptive = new SqliteStore(full);
    expect(full.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await adaptive.close();
    const normal = openSqlite(path(), { synchronous: 'NORMAL' });
    const background = new SqliteStore(normal);
    expect(normal.pragma('wal_autocheckpoint', { simple: true })).toBe(BACKSTOP_AUTOCHECKPOINT);
    await background.close();
  });

  it('leaves an automatic checkpoint that was turned off, off', async () => {
    const db = openSqlite(path());
    db.pragma('wal_autocheckpoint = 0');
    const store = new SqliteStore(db, { checkpoint: 'background' });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    await store.close();
  });

  it("with checkpoint 'inline', a long sweep's worker leaves its pages in the file, a short sweep has none", async () => {
    // The worker copies the WAL at least when it stops, at the end of the sweep.
    const run = async (receipts: number) => {
      const file = path();
      const clock = new FakeClock();
      const db = openSqlite(file);
      db.pragma('wal_autocheckpoint = 0'); // only a checkpointer can fill the database file
      const store = new SqliteStore(db, { clock, checkpoint: 'inline' });
      await recordNoops(new Executor({ store, authorize: () => true, clock }), receipts);
      clock.advance(2000);
      const swept = await store.housekeeping.sweep({
        now: clock.now(),
        tombstoneTtlMs: 60_000,
        batchSize: 1,
      });
      const inFile = rowsInDatabaseFile(file, 'idem_tombstones');
      await store.close();
      return { batches: swept.batches, inFile };
    };
    expect(await run(SWEEP_CHECKPOINTER_AFTER - 2)).toEqual({
      batches: SWEEP_CHECKPOINTER_AFTER - 2,
      inFile: 0,
    });
    expect(await run(SWEEP_CHECKPOINTER_AFTER + 4)).toEqual({
      batches: SWEEP_CHECKPOINTER_AFTER + 4,
      inFile: SWEEP_CHECKPOINTER_AFTER + 4,
    });
  });
});

describe('SqliteStore inline checkpoints during a long sweep', () => {
  it("raises the connection's own threshold while the sweep's worker runs, and sets it back", async () => {
    const clock = new FakeClock();
    const db = openSqlite(path());
    const pragmas: string[] = [];
    const watched = watchPragmas(db, pragmas);
    const store = new SqliteStore(watched, { clock, checkpoint: 'inline' });
    await recordNoops(new Executor({ store, authorize: () => true, clock }), SWEEP_CHECKPOINTER_AFTER + 2);
    const thresholds = (): string[] => pragmas.filter((p) => p.startsWith('wal_autocheckpoint ='));
    expect(thresholds()).toEqual([]);
    clock.advance(2000);
    await store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs: 60_000, batchSize: 1 });
    expect(thresholds()[0]).toBe(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT}`);
    expect(thresholds().at(-1)).toBe('wal_autocheckpoint = 1000');
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await store.close();
  });
});

describe("SqliteStore checkpoint 'adaptive'", () => {
  const thresholds = (pragmas: string[]): string[] =>
    pragmas.filter((p) => p.startsWith('wal_autocheckpoint ='));

  it('hands checkpoints to the worker while callers share commits, and takes them back when alone', async () => {
    const db = openSqlite(path());
    const pragmas: string[] = [];
    const store = new SqliteStore(watchPragmas(db, pragmas), { checkpoint: 'adaptive' });
    const executor = new Executor({ store, authorize: () => true });
    let n = 0;
    const call = () => recordNoops(executor, 1, (n += 1));
    await recordNoops(executor, 20, 1000);
    expect(thresholds(pragmas)).toEqual([]); // lone: SQLite's own checkpoint at 1,000 pages
    for (let round = 0; round < 4; round += 1) await Promise.all(Array.from({ length: 16 }, call));
    expect(thresholds(pragmas)).toEqual([`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT}`]);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(BACKSTOP_AUTOCHECKPOINT);
    await recordNoops(executor, 100, 2000);
    expect(thresholds(pragmas)).toEqual([
      `wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT}`,
      'wal_autocheckpoint = 1000',
    ]);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await store.close();
  });

  it('hands the checkpoints of a long sweep to the worker, then gives them back', async () => {
    const clock = new FakeClock();
    const db = openSqlite(path());
    const pragmas: string[] = [];
    const store = new SqliteStore(watchPragmas(db, pragmas), { clock, checkpoint: 'adaptive' });
    await recordNoops(new Executor({ store, authorize: () => true, clock }), SWEEP_CHECKPOINTER_AFTER + 2);
    clock.advance(2000);
    const swept = await store.housekeeping.sweep({ now: clock.now(), tombstoneTtlMs: 60_000, batchSize: 1 });
    expect(swept.tombstoned).toBe(SWEEP_CHECKPOINTER_AFTER + 2);
    expect(thresholds(pragmas)).toEqual([
      `wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT}`,
      'wal_autocheckpoint = 1000',
    ]);
    await store.close();
  });
});
