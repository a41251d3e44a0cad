import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  openSqlite,
  SqliteStore,
  type SqliteDatabase,
  type SqliteStoreOptions,
} from '../../packages/idem/src/adapters/sqlite/index.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/index.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';

/** The one effect every row performs: the same note insert (id, workspace, body, time). */
export const NOTES_SQL = `CREATE TABLE IF NOT EXISTS notes (
  note_id    TEXT PRIMARY KEY,
  workspace  TEXT NOT NULL,
  body       TEXT NOT NULL,
  created_at INTEGER NOT NULL
)`;
export const INSERT_NOTE_SQL = 'INSERT INTO notes (note_id, workspace, body, created_at) VALUES (?, ?, ?, ?)';

export const PRINCIPAL = 'bench';
export const WORKSPACE = 'default';

export type Synchronous = 'FULL' | 'NORMAL';

export function newNoteId(): string {
  return `note_${randomUUID()}`;
}

export function newKey(): string {
  return randomUUID();
}

/** The body of call `seq`: short, like a real note, and different per call. */
export function noteBody(seq: number): string {
  return `Investigate the parser, item ${seq}`;
}

/** A bare better-sqlite3 connection as the baselines use it: WAL and the given synchronous. */
export function openRaw(path: string, synchronous: Synchronous): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec(NOTES_SQL);
  return db;
}

export interface IdemSqlite {
  readonly path: string;
  readonly db: SqliteDatabase;
  readonly store: SqliteStore;
  readonly executor: Executor<SqliteDatabase>;
  readonly createNote: IdempotentOperation<SqliteDatabase, { body: string }>;
  close(): Promise<void>;
}

/** Idem through its library API: openSqlite, SqliteStore, Executor, and create_note as the effect. */
export function openIdemSqlite(
  path: string,
  synchronous: Synchronous,
  options: Pick<SqliteStoreOptions, 'groupCommit' | 'checkpoint'> = {},
  driver: 'better-sqlite3' | 'node:sqlite' = 'better-sqlite3',
): IdemSqlite {
  const db = openSqlite(path, { synchronous, driver });
  db.exec(NOTES_SQL);
  const insert = db.prepare(INSERT_NOTE_SQL);
  const store = new SqliteStore(db, options);
  const executor = new Executor<SqliteDatabase>({ store, authorize: () => true, logger: silentLogger });
  const createNote: IdempotentOperation<SqliteDatabase, { body: string }> = {
    name: 'create_note',
    version: 1,
    effect: (_db, args, context) => {
      const noteId = newNoteId();
      insert.run(noteId, context.identity.workspace, args.body, Date.now());
      return { resource_id: noteId, note_id: noteId };
    },
  };
  return { path, db, store, executor, createNote, close: () => store.close() };
}

/** Runs create_note through the executor; throws unless the outcome is what the row expects. */
export async function idemCall(
  idem: IdemSqlite,
  key: string,
  body: string,
  expect: 'executed' | 'replayed' | 'any',
): Promise<string> {
  const outcome = await idem.executor.run(idem.createNote, {
    principal: PRINCIPAL,
    workspace: WORKSPACE,
    key,
    args: { body },
  });
  if (!outcome.ok) throw new Error(`create_note failed: ${outcome.error.code}: ${outcome.error.message}`);
  if (expect !== 'any' && outcome.replayed !== (expect === 'replayed')) {
    throw new Error(`expected ${expect}, got replayed=${String(outcome.replayed)}`);
  }
  return outcome.operationId;
}
