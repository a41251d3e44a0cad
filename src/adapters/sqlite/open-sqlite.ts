import Database from 'better-sqlite3';
import type { SqliteDatabase } from './sqlite-database.js';

export interface OpenSqliteOptions {
  /**
   * `FULL` (default) makes every committed receipt survive power loss before its reply is sent;
   * `NORMAL` in WAL mode survives a process crash but may lose the last commits on power loss.
   */
  synchronous?: 'FULL' | 'NORMAL';
  readonly?: boolean;
}

/** Opens (creating if needed) a SQLite file in WAL mode, ready for a SqliteStore. */
export function openSqlite(path: string, options: OpenSqliteOptions = {}): SqliteDatabase {
  const db = new Database(path, { readonly: options.readonly ?? false });
  // WAL lets replays and reads proceed while a writer holds the lock.
  if (!options.readonly) db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  db.pragma('foreign_keys = ON');
  return db as unknown as SqliteDatabase;
}
