import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { sqliteTable, text as sqliteText } from 'drizzle-orm/sqlite-core';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import type pg from 'pg';
import type Database from 'better-sqlite3';
import { PrismaClient } from '../../examples/prisma/generated/client.js';
import { openPostgres } from '../../packages/idem/src/adapters/postgres/open-postgres.js';
import type { PgPool } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { FaultPoints as Faults } from '../../packages/idem/src/core/fault-points.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/executor/executor.js';
import type { EffectContext, EffectResult } from '../../packages/idem/src/executor/effect.js';
import {
  drizzleStore,
  type DrizzlePgTransaction,
  type DrizzleSqliteTransaction,
} from '../../packages/idem/src/integrations/drizzle/index.js';
import { kyselyStore } from '../../packages/idem/src/integrations/kysely/index.js';
import { prismaStore, type PrismaTransaction } from '../../packages/idem/src/integrations/prisma/index.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import type { IntegrationHarness } from './integration-spec.js';
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
/** The application table of the integration spec (Prisma's model Ticket). */
const TICKETS_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL)';

export interface TicketRow {
  id: string;
  workspace: string;
  title: string;
}

/** One ORM's store on a database, and the note insert written through the ORM's own `tx`. */
interface OrmOpened<Tx> {
  readonly store: IdemStore<Tx>;
  /** Synchronous on a synchronous store (Drizzle on better-sqlite3). */
  insert(tx: Tx, row: NoteRow): void | Promise<void>;
  /** The same for a `tickets` row. */
  insertTicket(tx: Tx, row: TicketRow): void | Promise<void>;
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
  await pool.query(TICKETS_TABLE_SQL);
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
  tickets: TicketRow;
}

const pgNotes = pgTable('notes', {
  note_id: pgText('note_id').primaryKey(),
  workspace: pgText('workspace').notNull(),
  body: pgText('body').notNull(),
});
const pgTickets = pgTable('tickets', {
  id: pgText('id').primaryKey(),
  workspace: pgText('workspace').notNull(),
  title: pgText('title').notNull(),
});
const sqliteTickets = sqliteTable('tickets', {
  id: sqliteText('id').primaryKey(),
  workspace: sqliteText('workspace').notNull(),
  title: sqliteText('title').notNull(),
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
        insertTicket: async (tx, row) => void (await tx.insertInto('tickets').values(row).execute()),
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
      database.exec(TICKETS_TABLE_SQL);
      const db = new Kysely<NotesDb>({
        dialect: new SqliteDialect({ database: database as unknown as Database.Database }),
      });
      const store = await kyselyStore(db, { engine: 'sqlite', database, ...storeOptions(options) });
      const helpers = sqliteHelpers(database, file);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: async (tx, row) => void (await tx.insertInto('notes').values(row).execute()),
        insertTicket: async (tx, row) => void (await tx.insertInto('tickets').values(row).execute()),
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
        insertTicket: async (tx, row) => void (await tx.insert(pgTickets).values(row)),
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
      database.exec(TICKETS_TABLE_SQL);
      const db = drizzleSqlite(database as unknown as Database.Database);
      const store = await drizzleStore(db, storeOptions(options));
      const helpers = sqliteHelpers(database, file);
      const opened: OrmOpened<StoreTx<typeof store>> = {
        store,
        insert: (tx, row) => void tx.insert(sqliteNotes).values(row).run(),
        insertTicket: (tx, row) => void tx.insert(sqliteTickets).values(row).run(),
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
        insertTicket: async (tx, row) => void (await tx.ticket.create({ data: row })),
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

export async function openOrmTestStore(
  harness: OrmHarness,
  options: TestStoreOptions = {},
): Promise<TestStore & { readonly opened: OrmOpened<unknown> }> {
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
    logger: silentLogger, // the tests read outcomes; the default would write every call to stderr
    authorize: options.authorize ?? (() => true),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const synchronous = opened.store.capabilities.synchronous;
  let closed = false;
  return {
    name: harness.name,
    path: where,
    opened,
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

/**
 * An ORM integration as the integration spec opens it: its effect writes a `tickets` row with the
 * ORM's own transaction (the amount in the title).
 */
export function ormIntegration(harness: OrmHarness): () => Promise<IntegrationHarness<unknown>> {
  return async () => {
    const t = await openOrmTestStore(harness);
    return {
      store: t.store,
      insertInvoice: (tx, id, workspace, cents) =>
        t.opened.insertTicket(tx, { id, workspace, title: String(cents) }),
      countInvoices: () => t.opened.count('tickets'),
      countReceipts: () => t.countReceipts(),
      close: () => t.close(),
    };
  };
}

/** Writes one `notes` row through the ORM's transaction, for the port contract suite. */
export const ormWriteRow: Record<string, (tx: never, id: string) => void | Promise<void>> = {
  'kysely:postgres': async (tx: Transaction<NotesDb>, id) =>
    void (await tx
      .insertInto('notes')
      .values({ note_id: id, workspace: 'ws-1', body: 'contract' })
      .execute()),
  'kysely:sqlite': async (tx: Transaction<NotesDb>, id) =>
    void (await tx
      .insertInto('notes')
      .values({ note_id: id, workspace: 'ws-1', body: 'contract' })
      .execute()),
  'drizzle:postgres': async (tx: DrizzlePgTransaction<Record<string, never>>, id) =>
    void (await tx.insert(pgNotes).values({ note_id: id, workspace: 'ws-1', body: 'contract' })),
  'drizzle:sqlite': (tx: DrizzleSqliteTransaction<Record<string, never>>, id) =>
    void tx.insert(sqliteNotes).values({ note_id: id, workspace: 'ws-1', body: 'contract' }).run(),
  'prisma:postgres': async (tx: PrismaTransaction<PrismaClient>, id) =>
    void (await tx.note.create({ data: { note_id: id, workspace: 'ws-1', body: 'contract' } })),
};

/** The ORM integrations as contract-test stores (the PostgreSQL ones where PostgreSQL is up). */
export const ormStoreFactories: readonly StoreFactory[] = ormHarnesses
  .filter((h) => h.engine === 'sqlite' || postgresAvailable)
  .map((harness) => ({ name: harness.name, create: (options) => openOrmTestStore(harness, options) }));
