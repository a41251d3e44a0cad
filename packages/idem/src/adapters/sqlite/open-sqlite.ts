import { accessSync, constants, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { storageUnavailable, type IdemError } from '../../core/errors.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { absolutePath, translateSqliteError } from './sqlite-errors.js';

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
}

/**
 * Opens (creating if needed) a SQLite file in WAL mode, ready for a SqliteStore. A file that cannot
 * be opened is an `unavailable` IdemError that names the file and why: a missing directory, a
 * directory in its place, a read-only file system, no permission (none retryable), a full disk
 * (retryable).
 */
export function openSqlite(path: string, options: OpenSqliteOptions = {}): SqliteDatabase {
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: options.readonly ?? false });
    // WAL lets replays and reads proceed while a writer holds the lock.
    if (!options.readonly) db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    db.pragma('foreign_keys = ON');
    db.pragma(`cache_size = ${-Math.max(1, Math.round((options.cacheMiB ?? 32) * 1024))}`);
    return db as unknown as SqliteDatabase;
  } catch (error) {
    db?.close();
    throw openFailure(path, error);
  }
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
  const code = (error as { code?: unknown } | null)?.code;
  // better-sqlite3 checks the directory itself and throws a TypeError without a code.
  if (code === undefined && !exists(dir)) return refuse(`the directory ${dir} does not exist`, 'ENOENT');
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
