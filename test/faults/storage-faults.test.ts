import { closeSync, openSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import type { LogFields, Logger } from '../../packages/idem/src/core/logger.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import {
  createNote,
  makeTempDir,
  NOTES_TABLE_SQL,
  openTestStore,
  type SqliteTestStore,
} from '../helpers/store-fixtures.js';

// SQLite faults other than a full disk (see disk-full.test.ts), each produced for real: a database
// opened read-only, and an I/O error from the operating system on the WAL file.

const opened: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of opened.splice(0).reverse()) await item.close();
});

const request = (key: string) => ({ principal: 'p', workspace: 'w', key, args: { body: 'private words' } });
const count = (db: SqliteDatabase, table: string) =>
  (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

function capturingLogger(lines: LogFields[]): Logger {
  const push = (event: string, fields: LogFields = {}) => void lines.push({ event, ...fields });
  return { info: push, warn: push, error: (event, fields) => push(event, { level: 'error', ...fields }) };
}

describe('storage faults on SQLite', () => {
  it('a read-only database: unavailable, not retryable, naming the file; replays still answer; nothing written', async () => {
    const writer: SqliteTestStore = openTestStore();
    opened.push(writer);
    const first = await writer.executor.run(writer.createNote, request('written'));
    expect(first.ok).toBe(true);

    const db = openSqlite(writer.path, { readonly: true });
    const store = new SqliteStore(db, { migrate: false });
    opened.push(store);
    const lines: LogFields[] = [];
    const executor = new Executor({ store, authorize: () => true, logger: capturingLogger(lines) });

    const refused = await executor.run(createNote, request('new'));
    if (refused.ok) throw new Error('a write succeeded on a read-only database');
    expect(refused.error).toMatchObject({
      code: 'unavailable',
      retryable: false,
      message: `the database at ${writer.path} is read-only (SQLITE_READONLY); nothing was committed`,
      cause: { driverCode: 'SQLITE_READONLY', path: writer.path },
    });
    expect(refused.error.retryAfterMs).toBeUndefined();
    expect(refused.error.nextAction).toMatch(/^An operator must fix the storage/);
    expect(lines.find((l) => l.event === 'idem.call' && l.outcome === 'unavailable')).toMatchObject({
      level: 'error',
      driver_code: 'SQLITE_READONLY',
      db_path: writer.path,
    });
    expect(JSON.stringify(lines)).not.toContain('private words');

    const replay = await executor.run(createNote, request('written'));
    expect(replay).toMatchObject({ ok: true, replayed: true });
    expect(await writer.countNotes()).toBe(1);
    expect(await writer.countReceipts()).toBe(1);
  });

  it('an I/O error writing the WAL: unavailable, not retryable, with the extended code; nothing committed', async (context) => {
    const dir = makeTempDir();
    opened.push({ close: () => rmSync(dir, { recursive: true, force: true }) });
    const path = join(dir, 'idem.sqlite');
    // Inline checkpoints: no worker thread holds a second descriptor of the WAL file.
    const db = openSqlite(path);
    db.exec(NOTES_TABLE_SQL);
    const store = new SqliteStore(db, { checkpoint: 'inline' });
    opened.push(store);
    const executor = new Executor({ store, authorize: () => true });
    expect((await executor.run(createNote, request('before'))).ok).toBe(true);

    const wal = walDescriptors(`${path}-wal`);
    if (wal === undefined) {
      if (process.env.CI) throw new Error('CI: /proc/self/fd is needed for the I/O error test');
      process.stderr.write('\n[idem tests] no /proc/self/fd here: the SQLite I/O error test is SKIPPED\n');
      context.skip();
      return;
    }
    expect(wal).toHaveLength(1);
    // The connection's WAL descriptor now reads the same file but refuses writes (EBADF): what
    // SQLite sees is the write(2) failing, as on a failing disk.
    const fd = wal[0] as number;
    closeSync(fd);
    const readOnly = openSync(`${path}-wal`, 'r');
    if (readOnly !== fd) {
      closeSync(readOnly);
      throw new Error(`the WAL descriptor ${fd} could not be replaced (got ${readOnly})`);
    }

    const failed = await executor.run(createNote, request('during'));
    if (failed.ok) throw new Error('a write succeeded through a failing WAL');
    expect(failed.error).toMatchObject({
      code: 'unavailable',
      retryable: false,
      message: `an I/O error (SQLITE_IOERR_WRITE) on the database at ${path}; the transaction was rolled back`,
      cause: { driverCode: 'SQLITE_IOERR_WRITE', path },
    });
    // Reads still work through the same connection: the earlier call replays, the failed one left nothing.
    expect(await executor.run(createNote, request('before'))).toMatchObject({ ok: true, replayed: true });
    expect(count(db, 'notes')).toBe(1);
    expect(count(db, 'idem_operations')).toBe(1);
    const other = openSqlite(path, { readonly: true });
    opened.push(other);
    expect(count(other, 'notes')).toBe(1);
    expect(count(other, 'idem_operations')).toBe(1);
  });
});

/** The descriptors of this process open on `file`, or undefined where /proc/self/fd is missing. */
function walDescriptors(file: string): number[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fd');
  } catch {
    return undefined;
  }
  return entries.map(Number).filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false;
    }
  });
}
