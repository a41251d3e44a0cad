import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationRecord } from '../../core/operation-record.js';
import { andThen } from '../../core/steps.js';
import type { MaybePromise } from '../../ports/maybe-async.js';
import type { SqlConnection, SqlDialect, SqlStatement, SqlValue } from '../sql/sql-driver.js';
import { OPERATION_COLUMNS, operationParams } from '../operation-rows.js';
import {
  existingOfFound,
  existingOfOwn,
  foundValues,
  ownValues,
  OWN_SELECT,
  RECORD_ARM,
  TOMBSTONE_ARM,
  type FoundRow,
} from '../sql/found-row.js';

/** The key in any version of its operation: the identity without `version` (see FIND_ANY). */
const KEY_WHERE = 'principal = ? AND workspace = ? AND operation = ? AND idem_key = ?';
const COLUMNS = OPERATION_COLUMNS.join(', ');
const KEY_COLUMNS: readonly string[] = ['principal', 'workspace', 'operation', 'version', 'idem_key'];

/**
 * The identity's own record by its primary key, reading only what a call decides on and answers
 * with (FOUND_COLUMNS less what the probe knows), never the whole record: a replay
 * ends here, in one B-tree probe.
 */
const FIND_OWN: SqlStatement = {
  name: 'idem_v2_sqlite_find_own',
  text: `SELECT ${OWN_SELECT} FROM idem_operations
     WHERE principal = ? AND workspace = ? AND operation = ? AND version = ? AND idem_key = ?`,
};

/**
 * Only when FIND_OWN found nothing: both tables over every version of the operation, the own
 * version first (a tombstone), else the oldest, and a record before a tombstone of the same
 * version. Two statements rather than one compound: a replay skips the compound's set-up (its
 * co-routines and sorter, about a microsecond), and a miss pays one primary-key probe more.
 */
const FIND_ANY: SqlStatement = {
  name: 'idem_v1_sqlite_find_any',
  text: `SELECT * FROM (
       SELECT ${RECORD_ARM} FROM idem_operations WHERE ${KEY_WHERE}
       UNION ALL
       SELECT ${TOMBSTONE_ARM} FROM idem_tombstones WHERE ${KEY_WHERE})
     ORDER BY version <> ?, version, arm
     LIMIT 1`,
};

/**
 * The first row of `statement` as values in its select list's order: read as arrays where the
 * driver can (building a row object costs more than the read), else as objects read by column
 * name (`byName`).
 */
function firstRow<Row>(
  conn: SqlConnection,
  statement: SqlStatement,
  params: readonly SqlValue[],
  byName: (row: Row) => unknown[],
): MaybePromise<readonly unknown[] | undefined> {
  if (conn.firstValues !== undefined) return conn.firstValues(statement, params);
  if (conn.values !== undefined) return andThen(conn.values(statement, params), (rows) => rows[0]);
  return andThen(conn.all<Row>(statement, params), (rows) =>
    rows[0] === undefined ? undefined : byName(rows[0]),
  );
}

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
      return andThen(
        firstRow(conn, FIND_OWN, [principal, workspace, operation, version, key], ownValues),
        (own) =>
          own !== undefined
            ? existingOfOwn(identity, own)
            : andThen(
                firstRow<FoundRow>(
                  conn,
                  FIND_ANY,
                  [principal, workspace, operation, key, principal, workspace, operation, key, version],
                  foundValues,
                ),
                (any) => existingOfFound(identity, any),
              ),
      );
    },
    upsert(conn: SqlConnection, record: OperationRecord) {
      return andThen(conn.run(UPSERT, operationParams(record) as never), () => undefined);
    },
  },
};
