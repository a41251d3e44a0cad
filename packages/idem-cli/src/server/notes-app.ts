import { randomUUID } from 'node:crypto';
import type { Clock, EffectResult } from 'idem';
import type { SqliteDatabase, SqliteStatement } from 'idem/sqlite';
import type { Note, NotesRepository } from './notes-repository.js';

export type { Note } from './notes-repository.js';

interface NoteRow {
  note_id: string;
  body: string;
  created_at: number;
}

/**
 * The reference server's application: notes in a workspace, stored with the application's own
 * SQL on the same database as Idem's receipts, so that a note and its receipt commit together.
 */
export class NotesApp implements NotesRepository<SqliteDatabase> {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #insert: SqliteStatement;
  readonly #get: SqliteStatement;
  readonly #list: SqliteStatement;

  constructor(db: SqliteDatabase, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
    db.exec(`
      CREATE TABLE IF NOT EXISTS notes (
        note_id      TEXT PRIMARY KEY,
        workspace    TEXT NOT NULL,
        body         TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        operation_id TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS notes_workspace ON notes (workspace, created_at);
    `);
    this.#insert = db.prepare(
      'INSERT INTO notes (note_id, workspace, body, created_at, operation_id) VALUES (?, ?, ?, ?, ?)',
    );
    this.#get = db.prepare('SELECT note_id, body, created_at FROM notes WHERE workspace = ? AND note_id = ?');
    this.#list = db.prepare(
      'SELECT note_id, body, created_at FROM notes WHERE workspace = ? ORDER BY created_at, note_id LIMIT ?',
    );
  }

  /** The effect of create_note: one INSERT on the transaction's connection. Synchronous by design. */
  insert(db: SqliteDatabase, workspace: string, body: string, operationId: string): EffectResult {
    const noteId = `note_${randomUUID().replaceAll('-', '')}`;
    // The store hands the effect the same connection its transaction runs on.
    if (db !== this.#db) throw new Error('create_note must write through the transaction connection');
    this.#insert.run(noteId, workspace, body, this.#clock.now(), operationId);
    return { resource_id: noteId, note_id: noteId };
  }

  get(workspace: string, noteId: string): Note | undefined {
    const row = this.#get.get(workspace, noteId) as NoteRow | undefined;
    return row === undefined ? undefined : toNote(row);
  }

  list(workspace: string, limit = 1000): Note[] {
    const rows = this.#list.all(workspace, limit) as NoteRow[];
    return rows.map(toNote);
  }
}

function toNote(row: NoteRow): Note {
  return { note_id: row.note_id, body: row.body, created_at: new Date(row.created_at).toISOString() };
}
