import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationRecord } from '../../core/operation-record.js';
import { andThen } from '../../core/steps.js';
import type { SqlConnection, SqlDialect, SqlStatement } from '../sql/sql-driver.js';
import { OPERATION_COLUMNS, operationParams } from '../operation-rows.js';
import { existingOfFound, foundValues, recordArm, TOMBSTONE_ARM, type FoundRow } from '../sql/found-row.js';

/** The key in any version of its operation: the identity without `version` (see FIND). */
const KEY_WHERE = 'principal = ? AND workspace = ? AND operation = ? AND idem_key = ?';
const COLUMNS = OPERATION_COLUMNS.join(', ');
const KEY_COLUMNS: readonly string[] = ['principal', 'workspace', 'operation', 'version', 'idem_key'];

/**
 * One statement, reading only what a call decides on and answers with (FOUND_COLUMNS), never the
 * whole record. First the identity's own record by its primary key: a replay ends there (the
 * compound's LIMIT 1 stops before the second arm runs). Else both tables over every version of
 * the operation: the own version wins, else the oldest, and a record before a tombstone of the
 * same version. Read as arrays where the driver can (in WAL mode each statement outside a
 * transaction takes and drops the read locks, and building a row object costs more than the
 * read), else as objects read by their column names.
 */
const FIND: SqlStatement = {
  name: 'idem_v3_sqlite_find',
  text: `SELECT ${recordArm('NULL')} FROM idem_operations
     WHERE principal = ? AND workspace = ? AND operation = ? AND version = ? AND idem_key = ?
   UNION ALL
   SELECT * FROM (SELECT * FROM (
       SELECT ${recordArm('NULL')} FROM idem_operations WHERE ${KEY_WHERE}
       UNION ALL
       SELECT ${TOMBSTONE_ARM} FROM idem_tombstones WHERE ${KEY_WHERE})
     ORDER BY version <> ?, version, arm
     LIMIT 1)
   LIMIT 1`,
};

const UPSERT: SqlStatement = {
  name: 'idem_v1_sqlite_upsert',
  text: `INSERT INTO idem_operations (${COLUMNS}) VALUES (${OPERATION_COLUMNS.map(() => '?').join(', ')})
     ON CONFLICT (${KEY_COLUMNS.join(', ')}) DO UPDATE SET ${OPERATION_COLUMNS.filter(
       (c) => !KEY_COLUMNS.includes(c),
     )
       .map((c) => `${c} = excluded.${c}`)
       .join(', ')}`,
};

/** SQLite's words: `?` placeholders, one writer (no row locks), integers for booleans. */
export const sqliteDialect: SqlDialect = {
  engine: 'sqlite',
  placeholders: (sql) => sql,
  skipLocked: '',
  forUpdate: '',
  bool: (value) => (value ? 1 : 0),
  call: {
    find(conn: SqlConnection, identity: OperationIdentity) {
      const { principal, workspace, operation, version, key } = identity;
      const params = [
        principal,
        workspace,
        operation,
        version,
        key,
        principal,
        workspace,
        operation,
        key,
        principal,
        workspace,
        operation,
        key,
        version,
      ];
      if (conn.values !== undefined)
        return andThen(conn.values(FIND, params), (rows) => existingOfFound(identity, rows[0]));
      return andThen(conn.all<FoundRow>(FIND, params), (rows) =>
        existingOfFound(identity, rows[0] === undefined ? undefined : foundValues(rows[0])),
      );
    },
    upsert(conn: SqlConnection, record: OperationRecord) {
      return andThen(conn.run(UPSERT, operationParams(record) as never), () => undefined);
    },
  },
};
