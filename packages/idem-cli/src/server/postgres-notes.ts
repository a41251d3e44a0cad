import { randomUUID } from 'node:crypto';
import type { Clock, EffectResult } from 'idem';
import { pgTarget, translatePgError, type PgClient, type PgPool, type PgQueryResult } from 'idem/postgres';
import type { Note, NotesRepository } from './notes-repository.js';

const NOTES_SCHEMA_LOCK = 7_346_219_005;

interface NoteRow {
  note_id: string;
  body: string;
  created_at: string;
}

/** The reference notes on PostgreSQL; create_note's effect runs on the store's transaction client. */
export class PostgresNotes implements NotesRepository<PgClient> {
  readonly #pool: PgPool;
  readonly #clock: Clock;

  private constructor(pool: PgPool, clock: Clock) {
    this.#pool = pool;
    this.#clock = clock;
  }

  static async create(pool: PgPool, clock: Clock): Promise<PostgresNotes> {
    // Several instances may start at once on an empty schema: create the table under a lock.
    const client = await pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [NOTES_SCHEMA_LOCK]);
      try {
        await client.query(`
      CREATE TABLE IF NOT EXISTS notes (
        note_id      TEXT PRIMARY KEY,
        workspace    TEXT NOT NULL,
        body         TEXT NOT NULL,
        created_at   BIGINT NOT NULL,
        operation_id TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS notes_workspace ON notes (workspace, created_at);
    `);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [NOTES_SCHEMA_LOCK]);
      }
    } finally {
      client.release();
    }
    return new PostgresNotes(pool, clock);
  }

  async insert(
    client: PgClient,
    workspace: string,
    body: string,
    operationId: string,
  ): Promise<EffectResult> {
    const noteId = `note_${randomUUID().replaceAll('-', '')}`;
    await client.query(
      'INSERT INTO notes (note_id, workspace, body, created_at, operation_id) VALUES ($1, $2, $3, $4, $5)',
      [noteId, workspace, body, this.#clock.now(), operationId],
    );
    return { resource_id: noteId, note_id: noteId };
  }

  async get(workspace: string, noteId: string): Promise<Note | undefined> {
    const { rows } = await this.#read(
      'SELECT note_id, body, created_at FROM notes WHERE workspace = $1 AND note_id = $2',
      [workspace, noteId],
    );
    return rows[0] === undefined ? undefined : toNote(rows[0]);
  }

  async list(workspace: string, limit = 1000): Promise<Note[]> {
    const { rows } = await this.#read(
      'SELECT note_id, body, created_at FROM notes WHERE workspace = $1 ORDER BY created_at, note_id LIMIT $2',
      [workspace, limit],
    );
    return rows.map(toNote);
  }

  /** A read on the pool; a server that cannot answer is `unavailable`, as in the store. */
  async #read(text: string, values: unknown[]): Promise<PgQueryResult<NoteRow>> {
    try {
      return await this.#pool.query<NoteRow>(text, values);
    } catch (error) {
      throw translatePgError(error, { target: pgTarget(this.#pool) });
    }
  }
}

function toNote(row: NoteRow): Note {
  return { note_id: row.note_id, body: row.body, created_at: new Date(Number(row.created_at)).toISOString() };
}
