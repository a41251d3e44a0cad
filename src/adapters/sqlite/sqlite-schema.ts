import type { SqliteDatabase } from './sqlite-database.js';

/**
 * Idem's tables, versioned with `PRAGMA user_version`. Each entry runs once, in order, in one
 * transaction; never edit an entry that has shipped, append a new one.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE idem_operations (
    operation_id TEXT NOT NULL UNIQUE,
    principal    TEXT NOT NULL,
    workspace    TEXT NOT NULL,
    operation    TEXT NOT NULL,
    version      INTEGER NOT NULL,
    idem_key     TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status       TEXT NOT NULL,
    resource_id  TEXT,
    result_json  TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (principal, workspace, operation, version, idem_key)
  );
  CREATE INDEX idem_operations_expires_at ON idem_operations (expires_at);
  CREATE INDEX idem_operations_created_at ON idem_operations (created_at);
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
  `,
];

/** Brings the schema to the latest version. Safe to call from several processes at once. */
export function migrateSqlite(db: SqliteDatabase): number {
  db.exec('BEGIN IMMEDIATE');
  try {
    let version = Number(db.pragma('user_version', { simple: true }));
    for (; version < MIGRATIONS.length; version += 1) {
      db.exec(MIGRATIONS[version] as string);
    }
    db.pragma(`user_version = ${version}`);
    db.exec('COMMIT');
    return version;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;
