import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { sqliteTable, text as sqliteText } from 'drizzle-orm/sqlite-core';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import type pg from 'pg';
import type Database from 'better-sqlite3';
import { PrismaClient } from '../../examples/prisma/generated/client.js';
import { openPostgres } from '../../src/adapters/postgres/open-postgres.js';
import type { PgPool } from '../../src/adapters/postgres/postgres-pool.js';
import { openSqlite } from '../../src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../src/adapters/sqlite/sqlite-database.js';
import { FaultPoints as Faults } from '../../src/core/fault-points.js';
import { Executor, type IdempotentOperation } from '../../src/executor/executor.js';
import type { EffectContext, EffectResult } from '../../src/executor/effect.js';
import { drizzleStore } from '../../src/integrations/drizzle/index.js';
import { kyselyStore } from '../../src/integrations/kysely/index.js';
import { prismaStore } from '../../src/integrations/prisma/index.js';
import type { IdemStore } from '../../src/ports/idem-store.js';
import { POSTGRES_URL, postgresAvailable } from './postgres-fixtures.js';
import type {
  NoteArgs,
  NoteOperationOptions,
  NoteRow,
  StoreFactory,
  TestStore,
  TestStoreOptions,
} from './store-fixtures.js';

const NOTES_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS notes (note_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, body TEXT NOT NULL)';

/** One ORM's store on a database, and the note insert written through the ORM's own `tx`. */
interface OrmOpened<Tx> {
  readonly store: IdemStore<Tx>;
  /** Synchronous on a synchronous store (Drizzle on better-sqlite3). */
  insert(tx: Tx, row: NoteRow): void | Promise<void>;
  count(table: string): Promise<number>;
  listNotes(): Promise<NoteRow[]>;
  /** Closes the ORM and its connections; `drop` also removes the database. */
  close(drop: boolean): Promise<void>;
}

type StoreTx<S> = S extends IdemStore<infer Tx> ? Tx : never;

interface OrmHarness {
  readonly name: string;
  readonly engine: 'postgres' | 'sqlite';
  open(where: string, options: TestStoreOptions): Promise<OrmOpened<unknown>>;
}

const storeOptions = (options: TestStoreOptions) => ({
  ...(options.clock === undefined ? {} : { clock: options.clock }),
  ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
});

async function pgPool(schema: string): Promise<PgPool> {
  const pool = await openPostgres(POSTGRES_URL, { schema, max: 4 });
  await pool.query(NOTES_TABLE_SQL);
  return pool;
}

function pgHelpers(pool: PgPool, schema: string) {
  return {
    count: async (table: string) =>
      Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n ?? 0),
    listNotes: async () =>
      (await pool.query<NoteRow>('SELECT note_id, workspace, body FROM notes ORDER BY note_id')).rows,
    drop: () => pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).then(() => undefined),
  };
}

function sqliteHelpers(db: SqliteDatabase, file: string) {
  return {
    count: async (table: string) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
    listNotes: async () =>
      db.prepare('SELECT note_id, workspace, body FROM notes ORDER BY note_id').all() as NoteRow[],
    drop: () => fs.rmSync(path.dirname(file), { recursive: true, force: true }),
  };
}

interface NotesDb {
  notes: NoteRow;
}

const pgNotes = pgTable('notes', {
  note_id: pgText('note_id').primaryKey(),
  workspace: pgText('workspace').notNull(),
  body: pgText('body').notNull(),
});
const sqliteNotes = sqliteTable('notes', {
  note_id: sqliteText('note_id').primaryKey(),
  workspace: sqliteText('workspace').notNull(),
  body: sqliteText('body').notNull(),
});

export const ormHarnesses: readonly OrmHarness[] = [
  {
    name: 'kysely:postgres',
    engine: 'postgres',
    async open(schema, options) {
      const pool = await pgPool(schema);
      const db = new Kysely<NotesDb>({ dialect: new PostgresDialect({ pool: pool as unknown as pg.Pool }) });
      const store = await kyselyStore(db, { engine: 'postgres', ...storeOptions(options) });
      const helpers = pgHelpers(pool, schema);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: async (tx, row) => void (await tx.insertInto('notes').values(row).execute()),
        ...helpers,
        async close(drop) {
          if (drop) await helpers.drop();
          await db.destroy(); // ends the pool
        },
      };
      return opened as OrmOpened<unknown>;
    },
  },
  {
    name: 'kysely:sqlite',
    engine: 'sqlite',
    async open(file, options) {
      const database = openSqlite(file);
      database.exec(NOTES_TABLE_SQL);
      const db = new Kysely<NotesDb>({
        dialect: new SqliteDialect({ database: database as unknown as Database.Database }),
      });
      const store = await kyselyStore(db, { engine: 'sqlite', database, ...storeOptions(options) });
      const helpers = sqliteHelpers(database, file);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: async (tx, row) => void (await tx.insertInto('notes').values(row).execute()),
        ...helpers,
        async close(drop) {
          await db.destroy(); // closes the database
          if (drop) helpers.drop();
        },
      };
      return opened as OrmOpened<unknown>;
    },
  },
  {
    name: 'drizzle:postgres',
    engine: 'postgres',
    async open(schema, options) {
      const pool = await pgPool(schema);
      const db = drizzlePg(pool as unknown as pg.Pool);
      const store = await drizzleStore(db, storeOptions(options));
      const helpers = pgHelpers(pool, schema);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: async (tx, row) => void (await tx.insert(pgNotes).values(row)),
        ...helpers,
        async close(drop) {
          if (drop) await helpers.drop();
          await pool.end();
        },
      };
      return opened as OrmOpened<unknown>;
    },
  },
  {
    name: 'drizzle:sqlite',
    engine: 'sqlite',
    async open(file, options) {
      const database = openSqlite(file);
      database.exec(NOTES_TABLE_SQL);
      const db = drizzleSqlite(database as unknown as Database.Database);
      const store = await drizzleStore(db, storeOptions(options));
      const helpers = sqliteHelpers(database, file);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: (tx, row) => void tx.insert(sqliteNotes).values(row).run(),
        ...helpers,
        async close(drop) {
          database.close();
          if (drop) helpers.drop();
        },
      };
      return opened as OrmOpened<unknown>;
    },
  },
  {
    name: 'prisma:postgres',
    engine: 'postgres',
    async open(schema, options) {
      const pool = await pgPool(schema);
      const prisma = new PrismaClient({
        adapter: new PrismaPg(
          { connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 4 },
          { schema },
        ),
      });
      const store = await prismaStore(prisma, storeOptions(options));
      const helpers = pgHelpers(pool, schema);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: async (tx, row) => void (await tx.note.create({ data: row })),
        ...helpers,
        async close(drop) {
          await prisma.$disconnect();
          if (drop) await helpers.drop();
          await pool.end();
        },
      };
      return opened as OrmOpened<unknown>;
    },
  },
];

function noteOperation(
  opened: OrmOpened<unknown>,
  synchronous: boolean,
  options: NoteOperationOptions = {},
): IdempotentOperation<unknown, NoteArgs> {
  const { afterInsert, extraResult } = options;
  const row = (args: NoteArgs, context: EffectContext): NoteRow => ({
    note_id: `note_${randomUUID()}`,
    workspace: context.identity.workspace,
    body: args.body,
  });
  const result = (note: NoteRow): EffectResult => ({
    resource_id: note.note_id,
    note_id: note.note_id,
    ...extraResult,
  });
  return {
    name: 'create_note',
    version: options.version ?? 1,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    effect: synchronous
      ? (tx, args, context) => {
          const note = row(args, context);
          void opened.insert(tx, note);
          void afterInsert?.(context);
          return result(note);
        }
      : async (tx, args, context) => {
          const note = row(args, context);
          await opened.insert(tx, note);
          await afterInsert?.(context);
          return result(note);
        },
  };
}

// How many open stores use each database (a schema or a file), so the last one drops it.
const users = new Map<string, number>();

async function openOrmTestStore(harness: OrmHarness, options: TestStoreOptions = {}): Promise<TestStore> {
  const where =
    options.path ??
    (harness.engine === 'postgres'
      ? `idem_orm_${randomUUID().replaceAll('-', '').slice(0, 16)}`
      : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'idem-orm-')), 'idem.sqlite'));
  users.set(where, (users.get(where) ?? 0) + 1);
  const opened = await harness.open(where, options);
  const faults = options.faults ?? new Faults();
  const executor = new Executor<unknown>({
    store: opened.store,
    faults,
    authorize: options.authorize ?? (() => true),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const synchronous = opened.store.capabilities.synchronous;
  let closed = false;
  return {
    name: harness.name,
    path: where,
    store: opened.store,
    executor,
    faults,
    createNote: noteOperation(opened, synchronous),
    noteOperation: (o) => noteOperation(opened, synchronous, o),
    countNotes: () => opened.count('notes'),
    countReceipts: () => opened.count('idem_operations'),
    countTombstones: () => opened.count('idem_tombstones'),
    listNotes: () => opened.listNotes(),
    async close() {
      if (closed) return;
      closed = true;
      await opened.store.close();
      const left = (users.get(where) ?? 1) - 1;
      if (left > 0) users.set(where, left);
      else users.delete(where);
      await opened.close(left === 0);
    },
  };
}

/** The ORM integrations as contract-test stores (the PostgreSQL ones where PostgreSQL is up). */
export const ormStoreFactories: readonly StoreFactory[] = ormHarnesses
  .filter((h) => h.engine === 'sqlite' || postgresAvailable)
  .map((harness) => ({ name: harness.name, create: (options) => openOrmTestStore(harness, options) }));
