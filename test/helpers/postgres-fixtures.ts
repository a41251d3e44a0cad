import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import type { PgClient, PgPool } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { PostgresStore } from '../../packages/idem/src/adapters/postgres/postgres-store.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/executor/executor.js';
import type { EffectContext, EffectResult } from '../../packages/idem/src/executor/effect.js';
import { FaultPoints } from '../../packages/idem/src/core/fault-points.js';
import type {
  NoteArgs,
  NoteOperationOptions,
  NoteRow,
  TestStore,
  TestStoreOptions,
} from './store-fixtures.js';

/** The PostgreSQL the tests use: the machine's own, trust auth, database `test`. */
export const POSTGRES_URL = process.env.IDEM_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Whether PostgreSQL can be reached. In CI it must be: the PostgreSQL suite never skips there.
 * On a laptop without it the suite is left out with a printed reason.
 */
export const postgresAvailable: boolean = await (async () => {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    if (process.env.CI) {
      throw new Error(`CI: PostgreSQL at ${POSTGRES_URL} cannot be reached: ${(error as Error).message}`);
    }
    process.stderr.write(
      `\n[idem tests] PostgreSQL at ${POSTGRES_URL} is not reachable (${(error as Error).message}); ` +
        'the PostgreSQL store suite is SKIPPED on this machine. Set IDEM_TEST_DATABASE_URL or start PostgreSQL.\n',
    );
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
})();

const NOTES_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS notes (note_id TEXT PRIMARY KEY, workspace TEXT, body TEXT)';

async function insertNote(client: PgClient, args: NoteArgs, context: EffectContext): Promise<EffectResult> {
  const noteId = `note_${randomUUID()}`;
  await client.query('INSERT INTO notes (note_id, workspace, body) VALUES ($1, $2, $3)', [
    noteId,
    context.identity.workspace,
    args.body,
  ]);
  return { resource_id: noteId, note_id: noteId };
}

export function pgNoteOperation(options: NoteOperationOptions = {}): IdempotentOperation<PgClient, NoteArgs> {
  const { afterInsert, extraResult } = options;
  return {
    name: 'create_note',
    version: options.version ?? 1,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    async effect(client, args, context) {
      const result = await insertNote(client, args, context);
      await afterInsert?.(context);
      return extraResult === undefined ? result : { ...result, ...extraResult };
    },
  };
}

// Schemas made here, and how many open stores still use each.
const openPerSchema = new Map<string, number>();

/** A PostgresStore in its own schema (`path` names it; pass another store's path to share it). */
export async function openPostgresTestStore(options: TestStoreOptions = {}): Promise<TestStore> {
  const schema = options.path ?? `idem_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  openPerSchema.set(schema, (openPerSchema.get(schema) ?? 0) + 1);
  const pool: PgPool = await openPostgres(POSTGRES_URL, { schema, max: 4 });
  await pool.query(NOTES_TABLE_SQL);
  const store = await PostgresStore.create(pool, {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
  });
  const faults = options.faults ?? new FaultPoints();
  const executor = new Executor<PgClient>({
    store,
    faults,
    logger: silentLogger, // the tests read outcomes; the default would write every call to stderr
    authorize: options.authorize ?? (() => true),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const count = (table: string) => async () =>
    Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n ?? 0);
  let closed = false;
  return {
    name: 'postgres',
    path: schema,
    store: store as never,
    executor: executor as never,
    faults,
    createNote: pgNoteOperation() as never,
    noteOperation: (o?: NoteOperationOptions) => pgNoteOperation(o) as never,
    countNotes: count('notes'),
    countReceipts: count('idem_operations'),
    countTombstones: count('idem_tombstones'),
    listNotes: async () =>
      (await pool.query<NoteRow>('SELECT note_id, workspace, body FROM notes ORDER BY note_id')).rows,
    async close() {
      if (closed) return;
      closed = true;
      await store.close();
      const users = openPerSchema.get(schema) ?? 1;
      if (users > 1) openPerSchema.set(schema, users - 1);
      else {
        openPerSchema.delete(schema);
        await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      }
      await pool.end();
    },
  };
}
