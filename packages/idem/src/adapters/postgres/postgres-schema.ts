import type { PgPool } from './postgres-pool.js';

/**
 * Idem's tables, versioned in `idem_schema_migrations`. Each entry runs once, in order, in one
 * transaction, under an advisory lock so that several instances starting at once migrate once.
 * Never edit an entry that has shipped; append a new one.
 */
const MIGRATIONS: readonly string[] = [
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
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    expires_at          BIGINT,
    deadline_at         BIGINT,
    attempt_count       INTEGER NOT NULL DEFAULT 0,
    dispatched          BOOLEAN NOT NULL DEFAULT FALSE,
    lease_owner         TEXT,
    lease_expires_at    BIGINT,
    next_attempt_at     BIGINT,
    cancel_requested_at BIGINT,
    resolved_by         TEXT,
    resolved_at         BIGINT,
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
    receipt_expired_at BIGINT NOT NULL,
    expires_at         BIGINT NOT NULL,
    PRIMARY KEY (principal, workspace, operation, version, idem_key)
  );
  CREATE INDEX idem_tombstones_expires_at ON idem_tombstones (expires_at);
  CREATE TABLE idem_attempts (
    attempt_id   TEXT PRIMARY KEY,
    operation_id TEXT NOT NULL,
    number       INTEGER NOT NULL,
    worker_id    TEXT NOT NULL,
    started_at   BIGINT NOT NULL,
    ended_at     BIGINT,
    outcome      TEXT,
    detail       TEXT
  );
  CREATE INDEX idem_attempts_operation ON idem_attempts (operation_id, number);
  CREATE TABLE idem_outbox (
    id               BIGSERIAL PRIMARY KEY,
    dedup_key        TEXT NOT NULL UNIQUE,
    destination      TEXT NOT NULL,
    payload_json     TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT NOT NULL,
    lease_owner      TEXT,
    lease_expires_at BIGINT,
    last_error       TEXT,
    dispatched_at    BIGINT
  );
  CREATE INDEX idem_outbox_due ON idem_outbox (next_attempt_at) WHERE dispatched_at IS NULL;
  `,
  // 2: operator audit trail; outbox dead letters, and an index for sweeping delivered messages.
  `
  ALTER TABLE idem_operations ADD COLUMN IF NOT EXISTS audit_json TEXT;
  ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS dead_at BIGINT;
  CREATE INDEX IF NOT EXISTS idem_outbox_delivered ON idem_outbox (dispatched_at)
    WHERE dispatched_at IS NOT NULL;
  CREATE INDEX IF NOT EXISTS idem_outbox_dead ON idem_outbox (dead_at) WHERE dead_at IS NOT NULL;
  `,
  // 3: a call finds its key in every version of its operation (a key never runs again under a new
  // version): the key's records and tombstones by (principal, workspace, operation, key). Not
  // unique, so a schema that already holds one key under two versions still migrates.
  `
  CREATE INDEX IF NOT EXISTS idem_operations_key ON idem_operations (principal, workspace, operation, idem_key, version);
  CREATE INDEX IF NOT EXISTS idem_tombstones_key ON idem_tombstones (principal, workspace, operation, idem_key, version);
  `,
  // 4: the primary keys in the order of the key index of 3 (principal, workspace, operation,
  // idem_key, version): the same columns, so the same uniqueness, and one index serves both the
  // identity (the own version, ON CONFLICT) and the key in every version. Each first execution
  // then maintains one B-tree fewer (issue 27: its WAL was 2.1x the naive transaction's). Rebuilds
  // the two primary keys once, holding the tables' locks while it does.
  `
  ALTER TABLE idem_operations DROP CONSTRAINT idem_operations_pkey;
  DROP INDEX IF EXISTS idem_operations_key;
  ALTER TABLE idem_operations ADD CONSTRAINT idem_operations_pkey
    PRIMARY KEY (principal, workspace, operation, idem_key, version);
  ALTER TABLE idem_tombstones DROP CONSTRAINT idem_tombstones_pkey;
  DROP INDEX IF EXISTS idem_tombstones_key;
  ALTER TABLE idem_tombstones ADD CONSTRAINT idem_tombstones_pkey
    PRIMARY KEY (principal, workspace, operation, idem_key, version);
  `,
  // 5: the operator's lists of open work (outcome_unknown oldest first, running, accepted,
  // cancel_requested) by state in operation id order (ids begin with their creation time), without a
  // scan or a sort. Partial: a receipt, born succeeded,
  // never enters it, so first executions of inline tools pay nothing for it.
  `
  CREATE INDEX IF NOT EXISTS idem_operations_open ON idem_operations (status, operation_id)
    WHERE status IN ('accepted', 'running', 'cancel_requested', 'outcome_unknown');
  `,
  // 6: the traceparent of the call that accepted a durable operation (OpenTelemetry), which a
  // worker in another process links its attempts to. Null when the call was not traced.
  `
  ALTER TABLE idem_operations ADD COLUMN IF NOT EXISTS accepted_trace TEXT;
  `,
  // 7: a call's lookup as one function (issue 27): the identity's own record by its primary key,
  // and only when there is none the key's records and tombstones in every version (the own version
  // first, else the oldest; a record before a tombstone). Each query is planned once per session and
  // a replay runs only the first; the answer is one text column, a JSON array in FOUND_COLUMNS order
  // (found-row.ts), or NULL. Its tables resolve through the caller's search_path, as every other
  // statement's do. One statement, so every driver and ORM can run it.
  `
  CREATE OR REPLACE FUNCTION idem_find(p TEXT, w TEXT, o TEXT, v INTEGER, k TEXT) RETURNS TEXT
  LANGUAGE plpgsql STABLE AS $idem_find$
  DECLARE
    found TEXT;
  BEGIN
    SELECT json_build_array(0, version, fingerprint, expires_at, operation_id, status, resource_id,
        result_json, error_json, attempt_count, NULL)::text INTO found
      FROM idem_operations
      WHERE principal = p AND workspace = w AND operation = o AND idem_key = k AND version = v;
    IF found IS NOT NULL THEN
      RETURN found;
    END IF;
    SELECT json_build_array(arm, version, fingerprint, expires_at, operation_id, status, resource_id,
        result_json, error_json, attempt_count, receipt_expired_at)::text INTO found
      FROM (
        SELECT 0 AS arm, version, fingerprint, expires_at, operation_id, status, resource_id,
            result_json, error_json, attempt_count, NULL::BIGINT AS receipt_expired_at
          FROM idem_operations
          WHERE principal = p AND workspace = w AND operation = o AND idem_key = k
        UNION ALL
        SELECT 1, version, fingerprint, expires_at, NULL, NULL, NULL, NULL, NULL, NULL, receipt_expired_at
          FROM idem_tombstones
          WHERE principal = p AND workspace = w AND operation = o AND idem_key = k
      ) AS key_rows
      ORDER BY version <> v, version, arm
      LIMIT 1;
    RETURN found;
  END
  $idem_find$
  `,
  // 8: what each tool version declares about its results (checked when an operator settles one, in
  // any process), and the operator console's sessions (shared by every instance, kept over a
  // restart; the id is a digest of the cookie's value).
  `
  CREATE TABLE IF NOT EXISTS idem_tools (
    operation          TEXT NOT NULL,
    version            INTEGER NOT NULL,
    result_schema_json TEXT,
    declared_at        BIGINT NOT NULL,
    PRIMARY KEY (operation, version)
  );
  CREATE TABLE IF NOT EXISTS idem_sessions (
    id         TEXT PRIMARY KEY,
    principal  TEXT NOT NULL,
    csrf       TEXT NOT NULL,
    credential TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS idem_sessions_expires_at ON idem_sessions (expires_at);
  `,
];

/** An arbitrary constant: the advisory lock that serializes migrations across instances. */
const MIGRATION_LOCK = 7_346_219_004;

/**
 * Brings the schema (in the connection's search_path) to `target` (default: the latest version);
 * returns the version it is at. A lower `target` builds a schema as an older Idem left it.
 */
export async function migratePostgres(pool: PgPool, target: number = MIGRATIONS.length): Promise<number> {
  const client = await pool.connect();
  try {
    // Another instance's migration, however long, is waited for, whatever lock_timeout the pool's
    // sessions have (openPostgres's `lockTimeoutMs`); RESET below restores theirs.
    await client.query('SET lock_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS idem_schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)',
      );
      const { rows } = await client.query<{ v: number | null }>(
        'SELECT max(version) AS v FROM idem_schema_migrations',
      );
      let version = Number(rows[0]?.v ?? 0);
      for (; version < Math.min(target, MIGRATIONS.length); version += 1) {
        await client.query('BEGIN');
        try {
          await client.query(MIGRATIONS[version] as string);
          await client.query('INSERT INTO idem_schema_migrations (version, applied_at) VALUES ($1, $2)', [
            version + 1,
            Date.now(),
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
      return version;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await client.query('RESET lock_timeout').catch(() => undefined);
    client.release();
  }
}

/** The schema version this build creates and expects; `migratePostgres` brings a database up to it. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;
