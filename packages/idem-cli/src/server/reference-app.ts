import { openSqlite, type SqliteDatabase, translateSqliteError, SqliteStore } from 'idem/sqlite';
import { NotesApp } from './notes-app.js';
import { ReferenceAppBase } from './reference-app-base.js';
import { referenceSettings, type ReferenceSettingsOptions } from './reference-settings.js';

export { DEFAULT_TOMBSTONE_TTL_MS } from './reference-settings.js';
export { SERVER_INFO } from './reference-tools.js';

export interface ReferenceAppOptions extends ReferenceSettingsOptions {
  dbPath: string;
  synchronous?: 'FULL' | 'NORMAL';
}

/** The reference server on SQLite: one database, one store, one executor, the notes application. */
export class ReferenceApp extends ReferenceAppBase<SqliteDatabase> {
  readonly db: SqliteDatabase;
  readonly store: SqliteStore;
  readonly notes: NotesApp;

  constructor(options: ReferenceAppOptions) {
    const settings = referenceSettings(options);
    const db = openSqlite(options.dbPath, { synchronous: options.synchronous ?? 'FULL' });
    let notes: NotesApp;
    let store: SqliteStore;
    try {
      // The application's schema first, while the driver's own busy wait still covers concurrent starts.
      notes = new NotesApp(db, settings.clock);
      store = new SqliteStore(db, {
        clock: settings.clock,
        ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
      });
    } catch (error) {
      db.close();
      // A full disk or a read-only file at start-up: an error that names the file.
      throw translateSqliteError(error, 0, options.dbPath);
    }
    super(settings, store, notes, options.inFlightWaitMs);
    this.db = db;
    this.store = store;
    this.notes = notes;
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
