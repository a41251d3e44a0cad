import type { Clock } from '../../core/clock.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { LockWait, retryWhileBusy, retryWhileBusySync, SQLITE_BUSY_RETRY_MS } from './lock-wait.js';
import { translateSqliteError } from './sqlite-errors.js';

/**
 * Idem's tables, versioned with `PRAGMA user_version`. Each entry runs once, in order, in one
 * transaction; never edit an entry that has shipped, append a new one. An entry that adds columns
 * adds only those still absent, so a file that has one of them already still migrates.
 */
const MIGRATIONS: ReadonlyArray<string | ((db: SqliteDatabase) => void)> = [
  `
  CREATE TABLE idem_operations (
    operation_id        TEXT NOT NULL UNIQUE,
    principal           TEXT NOT NULL,
    workspace           TEXT NOT NULL,
    operation           TEXT NOT NULL,
    version             INTEGER NOT NULL,
    idem_key            TEXT NOT NULL,
    fingerprint         TEXT NOT NULL,
    kind                TEXT NOT NULL,
    status              TEXT NOT NULL,
    resource_id         TEXT,
    result_json         TEXT,
    args_json           TEXT,
    error_json          TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    expires_at          INTEGER,
    deadline_at         INTEGER,
    attempt_count       INTEGER NOT NULL DEFAULT 0,
    dispatched          INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_expires_at    INTEGER,
    next_attempt_at     INTEGER,
    cancel_requested_at INTEGER,
    resolved_by         TEXT,
    resolved_at         INTEGER,
    PRIMARY KEY (principal, workspace, operation, version, idem_key)
  );
  CREATE INDEX idem_operations_expires_at ON idem_operations (expires_at) WHERE expires_at IS NOT NULL;
  CREATE INDEX idem_operations_created_at ON idem_operations (created_at);
  CREATE INDEX idem_operations_due ON idem_operations (next_attempt_at)
    WHERE status IN ('accepted', 'running', 'cancel_requested');
  CREATE TABLE idem_tombstones (
    principal          TEXT NOT NULL,
    workspace          TEXT NOT NULL,
    operation          TEXT NOT NULL,
    version            INTEGER NOT NULL,
    idem_key           TEXT NOT NULL,
    fingerprint        TEXT NOT NULL,
    receipt_expired_at INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    PRIMARY KEY (principal, workspace, operation, version, idem_key)
  );
  CREATE INDEX idem_tombstones_expires_at ON idem_tombstones (expires_at);
  CREATE TABLE idem_attempts (
    attempt_id   TEXT PRIMARY KEY,
    operation_id TEXT NOT NULL,
    number       INTEGER NOT NULL,
    worker_id    TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    ended_at     INTEGER,
    outcome      TEXT,
    detail       TEXT
  );
  CREATE INDEX idem_attempts_operation ON idem_attempts (operation_id, number);
  CREATE TABLE idem_outbox (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    dedup_key        TEXT NOT NULL UNIQUE,
    destination      TEXT NOT NULL,
    payload_json     TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    last_error       TEXT,
    dispatched_at    INTEGER
  );
  CREATE INDEX idem_outbox_due ON idem_outbox (next_attempt_at) WHERE dispatched_at IS NULL;
  `,
  // 2: listing orders by rowid (insertion order), so the created_at index only cost every first
  // execution one more B-tree page per commit.
  `
  DROP INDEX IF EXISTS idem_operations_created_at;
  `,
  // 3: operator audit trail; outbox dead letters, and an index for sweeping delivered messages.
  (db) => {
    addColumnIfAbsent(db, 'idem_operations', 'audit_json', 'TEXT');
    addColumnIfAbsent(db, 'idem_outbox', 'dead_at', 'INTEGER');
    db.exec(`
      CREATE INDEX IF NOT EXISTS idem_outbox_delivered ON idem_outbox (dispatched_at)
        WHERE dispatched_at IS NOT NULL;
      CREATE INDEX IF NOT EXISTS idem_outbox_dead ON idem_outbox (dead_at) WHERE dead_at IS NOT NULL;
    `);
  },
  // 4: a call finds its key in every version of its operation (a key never runs again under a new
  // version): the key's records and tombstones by (principal, workspace, operation, key). Not
  // unique, so a file that already holds one key under two versions still migrates.
  `
  CREATE INDEX IF NOT EXISTS idem_operations_key ON idem_operations (principal, workspace, operation, idem_key, version);
  CREATE INDEX IF NOT EXISTS idem_tombstones_key ON idem_tombstones (principal, workspace, operation, idem_key, version);
  `,
  // 5: the primary keys in the order of the key index of 4 (principal, workspace, operation,
  // idem_key, version): the same columns, so the same uniqueness, and one B-tree serves both the
  // identity (the own version, ON CONFLICT) and the key in every version. Each first execution
  // then writes one B-tree fewer (issue 27). SQLite cannot change a primary key in place: both
  // tables are copied once, in rowid order, and their other indexes made again.
  (db) => {
    rebuildWithKeyOrder(db, 'idem_operations', [
      'CREATE INDEX idem_operations_expires_at ON idem_operations (expires_at) WHERE expires_at IS NOT NULL',
      `CREATE INDEX idem_operations_due ON idem_operations (next_attempt_at)
         WHERE status IN ('accepted', 'running', 'cancel_requested')`,
    ]);
    rebuildWithKeyOrder(db, 'idem_tombstones', [
      'CREATE INDEX idem_tombstones_expires_at ON idem_tombstones (expires_at)',
    ]);
  },
  // 6: the operator's lists of open work (outcome_unknown oldest first, running, accepted,
  // cancel_requested) by state in operation id order (ids begin with their creation time), without a
  // scan or a sort. Partial: a receipt, born succeeded,
  // never enters it, so first executions of inline tools pay nothing for it.
  `
  CREATE INDEX IF NOT EXISTS idem_operations_open ON idem_operations (status, operation_id)
    WHERE status IN ('accepted', 'running', 'cancel_requested', 'outcome_unknown');
  `,
  // 7: the traceparent of the call that accepted a durable operation (OpenTelemetry), which a
  // worker in another process links its attempts to. Null when the call was not traced.
  (db) => {
    addColumnIfAbsent(db, 'idem_operations', 'accepted_trace', 'TEXT');
  },
  // 8: what each tool version declares about its results (checked when an operator settles one, in
  // any process), and the operator console's sessions (shared by every instance, kept over a
  // restart; the id is a digest of the cookie's value).
  `
  CREATE TABLE IF NOT EXISTS idem_tools (
    operation          TEXT NOT NULL,
    version            INTEGER NOT NULL,
    result_schema_json TEXT,
    declared_at        INTEGER NOT NULL,
    PRIMARY KEY (operation, version)
  );
  CREATE TABLE IF NOT EXISTS idem_sessions (
    id         TEXT PRIMARY KEY,
    principal  TEXT NOT NULL,
    csrf       TEXT NOT NULL,
    credential TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS idem_sessions_expires_at ON idem_sessions (expires_at);
  `,
];

/**
 * Copies `table` into a table of the same columns whose primary key is (principal, workspace,
 * operation, idem_key, version), in rowid order, then drops the old table with its indexes and
 * makes `indexes` again. The new table's text is the old one's with only the primary key changed.
 * A table that has that primary key already (a file whose version was set back) keeps its rows.
 */
function rebuildWithKeyOrder(db: SqliteDatabase, table: string, indexes: readonly string[]): void {
  const row = db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?").get(table) as
    { sql: string } | undefined;
  const oldKey = 'PRIMARY KEY (principal, workspace, operation, version, idem_key)';
  const newKey = 'PRIMARY KEY (principal, workspace, operation, idem_key, version)';
  const recreate = indexes
    .map((sql) => sql.replace('CREATE INDEX ', 'CREATE INDEX IF NOT EXISTS '))
    .join(';\n');
  if (row?.sql.includes(newKey) === true) {
    db.exec(`DROP INDEX IF EXISTS ${table}_key; ${recreate};`);
    return;
  }
  if (row === undefined || !row.sql.includes(oldKey)) {
    throw new Error(`${table} is not as Idem's schema 4 left it: cannot rebuild its primary key`);
  }
  const created = row.sql
    .replace(oldKey, newKey)
    .replace(/^CREATE TABLE\s+("?)[A-Za-z_]+\1/, `CREATE TABLE ${table}_rekeyed`);
  const columns = (db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[])
    .map((c) => c.name)
    .join(', ');
  db.exec(`
    ${created};
    INSERT INTO ${table}_rekeyed (${columns}) SELECT ${columns} FROM ${table} ORDER BY rowid;
    DROP TABLE ${table};
    ALTER TABLE ${table}_rekeyed RENAME TO ${table};
    ${recreate};
  `);
}

function addColumnIfAbsent(db: SqliteDatabase, table: string, column: string, type: string): void {
  const columns = db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[];
  if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

/**
 * Brings the schema to `target` (default: the latest version); returns the version it is at. Safe
 * to call from several processes at once. A lower `target` builds a file as an older Idem left it.
 */
export function migrateSqlite(db: SqliteDatabase, target: number = MIGRATIONS.length): number {
  db.exec('BEGIN IMMEDIATE');
  try {
    const version = runSqliteMigrations(db, Number(db.pragma('user_version', { simple: true })), target);
    db.pragma(`user_version = ${version}`);
    db.exec('COMMIT');
    return version;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/**
 * The migrations after version `from` up to `target`, in the transaction the caller holds (where
 * the version is kept is the caller's: `PRAGMA user_version` in migrateSqlite, a table of its own on
 * Durable Object storage, which forbids that pragma); returns the version reached.
 */
export function runSqliteMigrations(
  db: SqliteDatabase,
  from: number,
  target: number = MIGRATIONS.length,
): number {
  let version = from;
  for (; version < Math.min(target, MIGRATIONS.length); version += 1) {
    const migration = MIGRATIONS[version] as string | ((db: SqliteDatabase) => void);
    if (typeof migration === 'string') db.exec(migration);
    else migration(db);
  }
  return version;
}

/**
 * The schema version this build creates and expects (`PRAGMA user_version`); `migrateSqlite` brings
 * a database up to it.
 */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

/**
 * migrateSqlite as every store runs it at start-up, where several processes may migrate one file
 * at once: tried again while another connection holds the write lock (LockWait's schedule and
 * bound, `lockTimeoutMs` from the first try), blocking the thread between tries, as the synchronous
 * driver does. Its failures are translated (translateSqliteError): `busy` once the wait ran out.
 */
export function migrateSqliteWaiting(db: SqliteDatabase, lockTimeoutMs: number, clock?: Clock): number {
  try {
    return retryWhileBusySync(() => migrateSqlite(db), lockTimeoutMs, clock);
  } catch (error) {
    throw translateSqliteError(error, SQLITE_BUSY_RETRY_MS, db.name);
  }
}

/**
 * migrateSqliteWaiting for a store whose other work is asynchronous (Kysely's): the same schedule
 * and bound, but the pauses sleep on `clock` instead of blocking the event loop (an abort of
 * `signal` ends the wait with its reason).
 */
export async function migrateSqliteAsync(
  db: SqliteDatabase,
  lockTimeoutMs: number,
  clock?: Clock,
  signal?: AbortSignal,
): Promise<number> {
  try {
    return await retryWhileBusy(() => migrateSqlite(db), new LockWait(lockTimeoutMs, clock), { signal });
  } catch (error) {
    throw translateSqliteError(error, SQLITE_BUSY_RETRY_MS, db.name);
  }
}
