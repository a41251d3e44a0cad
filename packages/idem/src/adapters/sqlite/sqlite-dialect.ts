import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationRecord } from '../../core/operation-record.js';
import type { Existing } from '../../core/receipt.js';
import { andThen } from '../../core/steps.js';
import type { SqlConnection, SqlDialect, SqlStatement } from '../sql/sql-driver.js';
import { OPERATION_COLUMNS, operationParams, operationRowOf, toRecord } from '../operation-rows.js';

/** The key in any version of its operation: the identity without `version` (see FIND). */
const KEY_WHERE = 'principal = ? AND workspace = ? AND operation = ? AND idem_key = ?';
const COLUMNS = OPERATION_COLUMNS.join(', ');
const KEY_COLUMNS: readonly string[] = ['principal', 'workspace', 'operation', 'version', 'idem_key'];
/** Where the tombstone arm of FIND puts its version: the record's own `version` column. */
const VERSION = OPERATION_COLUMNS.indexOf('version');

/**
 * One statement for both tables, over every version of the operation: a record's columns, or NULLs
 * (but `version`) and the tombstone's three. The call's own version wins, else the oldest, and a
 * record before a tombstone of the same version. Read as arrays where the driver can (in WAL mode
 * each statement outside a transaction takes and drops the read locks, and building a row object
 * costs more than the read), else as objects whose keys are the same names in the same order.
 */
const FIND: SqlStatement = {
  name: 'idem_v2_sqlite_find',
  text: `SELECT * FROM (
     SELECT ${COLUMNS}, NULL AS t_fingerprint, NULL AS t_receipt_expired_at, NULL AS t_expires_at, 0 AS arm
     FROM idem_operations WHERE ${KEY_WHERE}
     UNION ALL
     SELECT ${OPERATION_COLUMNS.map((c) => (c === 'version' ? 'version' : 'NULL')).join(', ')},
       fingerprint, receipt_expired_at, expires_at, 1
     FROM idem_tombstones WHERE ${KEY_WHERE})
   ORDER BY version <> ?, version, arm
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

function existingOf(
  identity: OperationIdentity,
  values: readonly unknown[] | undefined,
): Existing | undefined {
  if (values === undefined) return undefined;
  // operation_id is never NULL in a receipt row; the tombstone arm selects NULL there.
  if (values[0] !== null) return { kind: 'receipt', receipt: toRecord(operationRowOf(values)) };
  const tomb = OPERATION_COLUMNS.length;
  return {
    kind: 'tombstone',
    tombstone: {
      identity: { ...identity, version: Number(values[VERSION]) },
      fingerprint: values[tomb] as string,
      receiptExpiredAt: Number(values[tomb + 1]),
      expiresAt: Number(values[tomb + 2]),
    },
  };
}

/** SQLite's words: `?` placeholders, one writer (no row locks), integers for booleans. */
export const sqliteDialect: SqlDialect = {
  engine: 'sqlite',
  placeholders: (sql) => sql,
  skipLocked: '',
  forUpdate: '',
  bool: (value) => (value ? 1 : 0),
  call: {
    find(conn: SqlConnection, identity: OperationIdentity) {
      const key = [identity.principal, identity.workspace, identity.operation, identity.key];
      const all = [...key, ...key, identity.version];
      if (conn.values !== undefined)
        return andThen(conn.values(FIND, all), (rows) => existingOf(identity, rows[0]));
      return andThen(conn.all<Record<string, unknown>>(FIND, all), (rows) =>
        existingOf(identity, rows[0] === undefined ? undefined : Object.values(rows[0])),
      );
    },
    upsert(conn: SqlConnection, record: OperationRecord) {
      return andThen(conn.run(UPSERT, operationParams(record) as never), () => undefined);
    },
  },
};
