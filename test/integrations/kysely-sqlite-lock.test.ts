import type Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { sqliteDialect } from '../../packages/idem/src/adapters/sqlite/sqlite-dialect.js';
import { migrateSqlite } from '../../packages/idem/src/adapters/sqlite/sqlite-schema.js';
import { kyselySqliteDriver } from '../../packages/idem/src/integrations/kysely/kysely-driver.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';

// Kysely on SQLite waits for the write lock as every SQLite store of Idem does (LockWait): on the
// injected clock, within lockTimeoutMs; and this process's own writers on other connections to the
// file are waited for in line (WriteTurn), woken by their end rather than by the clock.

const opened: { close(): void }[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) db.close();
  removeTempFiles();
});

/** Lets queued callbacks and I/O run (no timer). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

function connection(file: string): SqliteDatabase {
  const db = openSqlite(file);
  db.pragma('busy_timeout = 0'); // as kyselyStore sets it: lock waits are the driver's
  opened.push(db);
  return db;
}

function kyselyDriver(file: string, clock: FakeClock, lockTimeoutMs: number) {
  const database = connection(file);
  const db = new Kysely<unknown>({
    dialect: new SqliteDialect({ database: database as unknown as Database.Database }),
  });
  return kyselySqliteDriver(db, sqliteDialect, file, { lockTimeoutMs, clock });
}

function prepared(): string {
  const file = tempFile();
  const db = connection(file);
  migrateSqlite(db);
  db.exec('CREATE TABLE t (n INTEGER)');
  return file;
}

const insert = (n: number) => ({ text: `INSERT INTO t (n) VALUES (${n})` });

describe('kysely:sqlite write-lock wait', () => {
  it("waits for another connection's lock on the injected clock: not busy before lockTimeoutMs, busy at it", async () => {
    const file = prepared();
    const clock = new FakeClock();
    const driver = kyselyDriver(file, clock, 1000);
    const holder = connection(file);
    holder.exec('BEGIN IMMEDIATE');

    let settled = false;
    const running = driver
      .transaction(async (conn) => conn.run(insert(1), []))
      .then(
        () => 'committed',
        (error: unknown) => error,
      )
      .finally(() => {
        settled = true;
      });
    for (let i = 0; i < 1000 && clock.pendingSleepers === 0; i += 1) await turn();
    expect(clock.pendingSleepers).toBe(1); // its pause is on the injected clock
    while (clock.monotonic() < 999) {
      clock.advance(1);
      await turn();
      expect(settled).toBe(false);
    }
    for (let i = 0; i < 1000 && !settled; i += 1) {
      if (clock.pendingSleepers > 0) clock.advance(1);
      await turn();
    }
    expect(clock.monotonic()).toBe(1000);
    expect(await running).toMatchObject({
      code: 'busy',
      retryable: true,
      message: 'the write lock was not obtained within 1000 ms; nothing was changed',
    });
    holder.exec('ROLLBACK');
    expect(await driver.transaction(async (conn) => conn.run(insert(2), []))).toBe(1);
  });

  it('lines up writers of this process on other connections to the file: each woken by the one ahead, not by the clock', async () => {
    const file = prepared();
    const clock = new FakeClock(); // never advanced: a writer that polled would never wake
    const drivers = [kyselyDriver(file, clock, 1000), kyselyDriver(file, clock, 1000)] as const;
    const order: string[] = [];
    let settled = 0;
    const writes = [0, 1, 2, 3].map((i) =>
      (i % 2 === 0 ? drivers[0] : drivers[1])
        .transaction(async (conn) => {
          order.push(`enter ${i}`);
          await conn.run(insert(i), []);
          for (let n = 0; n < 3; n += 1) await turn(); // hold the write lock across turns
          order.push(`exit ${i}`);
        })
        .finally(() => {
          settled += 1;
        }),
    );
    // The clock stands still: only the end of the writer ahead can wake the next one.
    for (let i = 0; i < 10_000 && settled < writes.length; i += 1) await turn();
    expect(settled).toBe(writes.length);
    expect(clock.monotonic()).toBe(0);
    await Promise.all(writes);
    for (let n = 0; n < order.length; n += 2) {
      expect(order[n]?.replace('enter', 'exit')).toBe(order[n + 1]);
    }
    const reader = connection(file);
    expect((reader.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n).toBe(4);
  });
});
