import Database from 'better-sqlite3';
import type { SqliteDatabase } from './sqlite-database.js';

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

/** Opens (creating if needed) a SQLite file in WAL mode, ready for a SqliteStore. */
export function openSqlite(path: string, options: OpenSqliteOptions = {}): SqliteDatabase {
  const db = new Database(path, { readonly: options.readonly ?? false });
  // WAL lets replays and reads proceed while a writer holds the lock.
  if (!options.readonly) db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`cache_size = ${-Math.max(1, Math.round((options.cacheMiB ?? 32) * 1024))}`);
  return db as unknown as SqliteDatabase;
}
