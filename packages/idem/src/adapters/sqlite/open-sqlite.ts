import { accessSync, constants, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { storageUnavailable, type IdemError } from '../../core/errors.js';
import { fromNodeSqlite, type NodeSqliteDatabaseSync } from './node-sqlite-database.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { absolutePath, sqliteErrorCode, translateSqliteError } from './sqlite-errors.js';

/** The SQLite engines Idem runs on: the better-sqlite3 addon, or Node's built-in `node:sqlite`. */
export type SqliteDriverName = 'better-sqlite3' | 'node:sqlite';

export interface OpenSqliteOptions {
  /**
   * `FULL` (default) makes every committed receipt survive power loss before its reply is sent;
   * `NORMAL` in WAL mode survives a process crash but may lose the last commits on power loss.
   */
  synchronous?: 'FULL' | 'NORMAL';
  readonly?: boolean;
  /**
   * SQLite's page cache for this connection, MiB (default 32). SQLite's own default (2 MiB) cannot
   * hold the upper levels of a receipts index of millions of rows, so each replay would read them
   * again from the OS; 32 MiB keeps them for about ten million receipts.
   */
  cacheMiB?: number;
  /**
   * Which engine opens the file. `'better-sqlite3'`: the native addon (an optional peer of this
   * package). `'node:sqlite'`: Node's built-in SQLite (Node 22.16 or later), nothing to install.
   * Default: better-sqlite3 when it is installed and its addon loads, else node:sqlite when this
   * Node has it; `sqliteEngineOf(db)` says which one opened a database.
   */
  driver?: SqliteDriverName;
}

/**
 * Opens (creating if needed) a SQLite file in WAL mode, ready for a SqliteStore. A file that cannot
 * be opened is an `unavailable` IdemError that names the file and why: a missing directory, a
 * directory in its place, a read-only file system, no permission (none retryable), a full disk
 * (retryable).
 */
export function openSqlite(path: string, options: OpenSqliteOptions = {}): SqliteDatabase {
  let db: SqliteDatabase | undefined;
  try {
    db = openWith(options.driver, path, options.readonly ?? false);
    // WAL lets replays and reads proceed while a writer holds the lock.
    if (!options.readonly) db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    db.pragma('foreign_keys = ON');
    db.pragma(`cache_size = ${-Math.max(1, Math.round((options.cacheMiB ?? 32) * 1024))}`);
    return db;
  } catch (error) {
    if (db?.open === true) db.close();
    throw openFailure(path, error);
  }
}

const require = createRequire(import.meta.url);

/** A driver that is not there: a peer not installed, an addon that does not load, a Node without it. */
class MissingDriver extends Error {}

/** How long a connection waits for another's lock while the schema is set up (better-sqlite3's default). */
const OPEN_BUSY_TIMEOUT_MS = 5000;

function openWith(driver: SqliteDriverName | undefined, path: string, readonly: boolean): SqliteDatabase {
  if (driver !== undefined) {
    try {
      return driver === 'node:sqlite' ? openNode(path, readonly) : openBetter(path, readonly);
    } catch (error) {
      if (!(error instanceof MissingDriver)) throw error;
      throw storageUnavailable(`the SQLite engine ${driver} is not available: ${error.message}`, {
        retryable: false,
        cause: { driverCode: 'ENODRIVER' },
      });
    }
  }
  try {
    return openBetter(path, readonly);
  } catch (error) {
    if (!(error instanceof MissingDriver)) throw error;
    try {
      return openNode(path, readonly);
    } catch (nodeError) {
      if (!(nodeError instanceof MissingDriver)) throw nodeError;
      throw storageUnavailable(
        `no SQLite engine: better-sqlite3 is not installed or its addon does not load (${error.message}), ` +
          `and this Node ${process.version} has no node:sqlite with what Idem needs (Node 22.16 or later). ` +
          'Install better-sqlite3 (npm install better-sqlite3) or run a newer Node',
        { retryable: false, cause: { driverCode: 'ENODRIVER' } },
      );
    }
  }
}

function openBetter(path: string, readonly: boolean): SqliteDatabase {
  let Database: typeof BetterSqlite3;
  try {
    Database = require('better-sqlite3') as typeof BetterSqlite3;
  } catch (error) {
    throw new MissingDriver(`cannot load better-sqlite3: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    return new Database(path, { readonly }) as unknown as SqliteDatabase;
  } catch (error) {
    // The addon is loaded at the first connection: one built for another Node, or none built.
    const code = (error as { code?: unknown }).code;
    const message = String((error as Error).message);
    if (code === 'ERR_DLOPEN_FAILED' || /bindings file|NODE_MODULE_VERSION/.test(message)) {
      throw new MissingDriver(`better-sqlite3's addon does not load: ${message.split('\n')[0]}`);
    }
    throw error;
  }
}

function openNode(path: string, readonly: boolean): SqliteDatabase {
  let DatabaseSync: new (path: string, options: object) => NodeSqliteDatabaseSync;
  try {
    ({ DatabaseSync } = require('node:sqlite') as {
      DatabaseSync: new (path: string, options: object) => NodeSqliteDatabaseSync;
    });
  } catch {
    throw new MissingDriver(`Node ${process.version} has no node:sqlite`);
  }
  const db = new DatabaseSync(path, { readOnly: readonly, timeout: OPEN_BUSY_TIMEOUT_MS });
  // isTransaction and setReturnArrays came in 22.16 and 24.0.
  if (typeof db.isTransaction !== 'boolean') {
    db.close();
    throw new MissingDriver(
      `node:sqlite of Node ${process.version} lacks isTransaction (Node 22.16 or later)`,
    );
  }
  return fromNodeSqlite(db, { path, readonly });
}

/** Why `path` could not be opened, as precisely as the file system tells. */
function openFailure(path: string, error: unknown): IdemError {
  const file = absolutePath(path);
  if (file === undefined) return translateSqliteError(error, 0, path);
  const refuse = (why: string, driverCode: string) =>
    storageUnavailable(`cannot open the SQLite database at ${file}: ${why}`, {
      retryable: false,
      cause: { driverCode, path: file },
    });
  const dir = dirname(file);
  const code = sqliteErrorCode(error);
  // better-sqlite3 checks the directory itself and throws a TypeError without a code; node:sqlite
  // answers SQLITE_CANTOPEN.
  if ((code === undefined || code === 'SQLITE_CANTOPEN') && !exists(dir)) {
    return refuse(`the directory ${dir} does not exist`, 'ENOENT');
  }
  if (code !== 'SQLITE_CANTOPEN') return translateSqliteError(error, 0, path);
  if (isDirectory(file)) return refuse('it is a directory', 'EISDIR');
  const denied = writeRefusal(exists(file) ? file : dir);
  if (denied === 'EROFS') return refuse('the file system is read-only (EROFS)', 'EROFS');
  if (denied === 'EACCES' || denied === 'EPERM') return refuse(`permission denied (${denied})`, denied);
  return translateSqliteError(error, 0, path);
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The errno code that refuses writing `path`, or undefined when it may be written. */
function writeRefusal(path: string): string | undefined {
  try {
    accessSync(path, constants.W_OK);
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}
