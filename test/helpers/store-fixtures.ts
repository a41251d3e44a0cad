import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { openSqlite, type SqliteDriverName } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import type { Clock } from '../../packages/idem/src/core/clock.js';
import type { FaultPoints } from '../../packages/idem/src/core/fault-points.js';
import type { JsonObject } from '../../packages/idem/src/core/json.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import {
  Executor,
  type Authorize,
  type CallOutcome,
  type DurableOperation,
  type IdempotentOperation,
} from '../../packages/idem/src/executor/executor.js';
import type { EffectContext, EffectResult } from '../../packages/idem/src/executor/effect.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { FaultPoints as Faults } from '../../packages/idem/src/core/fault-points.js';
import { ormStoreFactories } from './orm-fixtures.js';
import { openPostgresTestStore, postgresAvailable } from './postgres-fixtures.js';

/** The arguments of the test operation `create_note` (what the fingerprint covers). */
export type NoteArgs = { body: string };

export interface NoteRow {
  note_id: string;
  workspace: string;
  body: string;
}

export interface TestStoreOptions {
  clock?: Clock;
  lockTimeoutMs?: number;
  faults?: FaultPoints;
  /**
   * Where the database lives; pass another store's `path` to open a second connection to the same
   * database. Omitted: a fresh database in a new temporary directory.
   */
  path?: string;
  /** Default: every principal may act in every workspace. */
  authorize?: Authorize;
}

export interface NoteOperationOptions {
  version?: number;
  retentionMs?: number;
  /** Called after the note row is written, inside the transaction; may throw to fail the effect. */
  afterInsert?: (context: EffectContext) => void | Promise<void>;
  /** Fields merged into the effect's result (to test what the executor does with them). */
  extraResult?: JsonObject;
}

/** What every store under test offers; contract tests use only this, so they run against any store. */
export interface TestStore {
  readonly name: string;
  readonly path: string;
  readonly store: IdemStore;
  readonly executor: Executor<unknown>;
  readonly faults: FaultPoints;
  /** `create_note` v1 with the default retention. */
  readonly createNote: IdempotentOperation<unknown, NoteArgs>;
  noteOperation(options?: NoteOperationOptions): IdempotentOperation<unknown, NoteArgs>;
  countNotes(): Promise<number>;
  countReceipts(): Promise<number>;
  countTombstones(): Promise<number>;
  listNotes(): Promise<NoteRow[]>;
  /** Closes the store; the temporary directory goes once every store opened on it is closed. */
  close(): Promise<void>;
}

export interface StoreFactory {
  readonly name: string;
  create(options?: TestStoreOptions): Promise<TestStore>;
}

export interface SqliteTestStore extends TestStore {
  readonly db: SqliteDatabase;
  readonly store: SqliteStore;
  readonly executor: Executor<SqliteDatabase>;
  readonly createNote: IdempotentOperation<SqliteDatabase, NoteArgs>;
  noteOperation(options?: NoteOperationOptions): IdempotentOperation<SqliteDatabase, NoteArgs>;
}

export const NOTES_TABLE_SQL =
  'CREATE TABLE IF NOT EXISTS notes (note_id TEXT PRIMARY KEY, workspace TEXT, body TEXT)';

/** The application effect: one row in `notes`, written synchronously on the store's own handle. */
export function insertNote(db: SqliteDatabase, args: NoteArgs, context: EffectContext): EffectResult {
  const noteId = `note_${randomUUID()}`;
  db.prepare('INSERT INTO notes (note_id, workspace, body) VALUES (?, ?, ?)').run(
    noteId,
    context.identity.workspace,
    args.body,
  );
  return { resource_id: noteId, note_id: noteId };
}

export function noteOperation(
  options: NoteOperationOptions = {},
): IdempotentOperation<SqliteDatabase, NoteArgs> {
  const { afterInsert, extraResult } = options;
  return {
    name: 'create_note',
    version: options.version ?? 1,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    effect(db, args, context) {
      const result = insertNote(db, args, context);
      afterInsert?.(context);
      return extraResult === undefined ? result : { ...result, ...extraResult };
    },
  };
}

export const createNote: IdempotentOperation<SqliteDatabase, NoteArgs> = {
  name: 'create_note',
  version: 1,
  effect: insertNote,
};

// Temporary directories made here, and how many open stores still use each.
const openPerDirectory = new Map<string, number>();

export function makeTempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'idem-test-'));
}

/**
 * Whether this Node has a node:sqlite that Idem runs on (22.16 or later): the contract suites then
 * run on it too ('node-sqlite'), as CI does on Node 22, 24 and 26.
 */
export const nodeSqliteAvailable: boolean = (() => {
  try {
    const { DatabaseSync } = createRequire(import.meta.url)('node:sqlite') as {
      DatabaseSync: new (path: string) => { isTransaction?: unknown; close(): void };
    };
    const db = new DatabaseSync(':memory:');
    const has = typeof db.isTransaction === 'boolean';
    db.close();
    return has;
  } catch {
    return false;
  }
})();

/**
 * Opens a SqliteStore (and an Executor on it) on a temporary file or on `options.path`, with
 * better-sqlite3 or, `driver` 'node:sqlite', Node's built-in SQLite (named 'node-sqlite' then).
 */
export function openTestStore(
  options: TestStoreOptions = {},
  driver: SqliteDriverName = 'better-sqlite3',
): SqliteTestStore {
  const dbPath = options.path ?? path.join(makeTempDir(), 'idem.sqlite');
  const dir = path.dirname(dbPath);
  if (options.path === undefined || openPerDirectory.has(dir)) {
    openPerDirectory.set(dir, (openPerDirectory.get(dir) ?? 0) + 1);
  }

  const db = openSqlite(dbPath, { driver });
  db.exec(NOTES_TABLE_SQL);
  const store = new SqliteStore(db, {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
  });
  const faults = options.faults ?? new Faults();
  const executor = new Executor<SqliteDatabase>({
    store,
    faults,
    logger: silentLogger, // the tests read outcomes; the default would write every call to stderr
    authorize: options.authorize ?? (() => true),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const count = (table: string) => async () =>
    (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  let closed = false;

  return {
    name: driver === 'node:sqlite' ? 'node-sqlite' : 'sqlite',
    path: dbPath,
    db,
    store,
    executor,
    faults,
    createNote,
    noteOperation,
    countNotes: count('notes'),
    countReceipts: count('idem_operations'),
    countTombstones: count('idem_tombstones'),
    listNotes: async () =>
      db.prepare('SELECT note_id, workspace, body FROM notes ORDER BY note_id').all() as NoteRow[],
    async close() {
      if (closed) return;
      closed = true;
      await store.close();
      const users = openPerDirectory.get(dir);
      if (users === undefined) return;
      if (users > 1) {
        openPerDirectory.set(dir, users - 1);
      } else {
        openPerDirectory.delete(dir);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Every store the contract tests run against. A PostgreSQL store is added here as
 * `{ name: 'postgres', create }`; `path` then names its database.
 */
export const storeFactories: readonly StoreFactory[] = onlyChosenStores([
  { name: 'sqlite', create: async (options) => openTestStore(options) },
  ...(nodeSqliteAvailable
    ? [
        {
          name: 'node-sqlite',
          create: async (options?: TestStoreOptions) => openTestStore(options, 'node:sqlite'),
        },
      ]
    : []),
  ...(postgresAvailable ? [{ name: 'postgres', create: openPostgresTestStore }] : []),
  ...ormStoreFactories,
]);

/**
 * `IDEM_TEST_STORES=sqlite,node-sqlite` keeps the contract suites to those stores (the other Node
 * lines run only the SQLite engines, whose drivers differ by Node; scripts/test-node-lines.mjs).
 * Unset: every store.
 */
export function onlyChosenStores<T extends { readonly name: string }>(stores: readonly T[]): readonly T[] {
  const chosen = process.env.IDEM_TEST_STORES?.split(',').map((name) => name.trim());
  return chosen === undefined ? stores : stores.filter((store) => chosen.includes(store.name));
}

/** The durable test operation: `Executor.start` accepts it, a worker would carry it out. */
export const startDeployment: DurableOperation = { name: 'start_deployment', version: 1 };

/** Arguments of `start_deployment` unless a test names others. */
export const DEPLOYMENT_ARGS: JsonObject = { service: 'api', version: '1.4.2' };

export interface DurableStartRequest {
  key: string;
  args?: JsonObject;
  /** Default 'alice'. */
  principal?: string;
  /** Default 'ws-1'. */
  workspace?: string;
}

/**
 * An Executor on `store` for durable starts. `inFlightWaitMs` defaults to 0, so a retry of an
 * unfinished operation answers at once instead of sleeping on the clock.
 */
export function durableExecutor(
  store: IdemStore,
  options: { clock?: Clock; inFlightWaitMs?: number; authorize?: Authorize } = {},
): Executor<unknown> {
  return new Executor<unknown>({
    store,
    logger: silentLogger,
    authorize: options.authorize ?? (() => true),
    inFlightWaitMs: options.inFlightWaitMs ?? 0,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
}

/** Calls `executor.start` for `operation` (default `start_deployment` v1) with the request's defaults. */
export function callStart(
  target: Executor<unknown> | TestStore,
  request: DurableStartRequest,
  operation: DurableOperation = startDeployment,
): Promise<CallOutcome> {
  const executor = target instanceof Executor ? target : target.executor;
  return executor.start(operation, {
    principal: request.principal ?? 'alice',
    workspace: request.workspace ?? 'ws-1',
    key: request.key,
    args: request.args ?? DEPLOYMENT_ARGS,
  });
}

/**
 * Creates an accepted durable operation through `executor.start` and returns its stored record;
 * throws if the start was not accepted.
 */
export async function startDurable(
  target: Executor<unknown> | TestStore,
  request: DurableStartRequest,
  operation: DurableOperation = startDeployment,
): Promise<OperationRecord> {
  const outcome = await callStart(target, request, operation);
  if (!outcome.ok) throw new Error(`start failed: ${outcome.error.code}: ${outcome.error.message}`);
  if (outcome.result.status !== 'accepted') {
    throw new Error(`start did not accept: ${JSON.stringify(outcome.result)}`);
  }
  const record = await target.store.ledger.get(outcome.operationId);
  if (record === undefined) throw new Error(`accepted operation ${outcome.operationId} is not stored`);
  return record;
}
