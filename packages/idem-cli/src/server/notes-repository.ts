import type { EffectResult } from 'idem';

export interface Note {
  note_id: string;
  body: string;
  created_at: string;
}

/**
 * The reference application's notes, on either engine. `insert` is create_note's effect: it writes
 * through the transaction handle the store passes (synchronously on SQLite, awaited on PostgreSQL)
 * so that the note and its receipt commit together.
 */
export interface NotesRepository<App> {
  insert(
    app: App,
    workspace: string,
    body: string,
    operationId: string,
  ): EffectResult | Promise<EffectResult>;
  get(workspace: string, noteId: string): Note | undefined | Promise<Note | undefined>;
  list(workspace: string, limit?: number): Note[] | Promise<Note[]>;
}
