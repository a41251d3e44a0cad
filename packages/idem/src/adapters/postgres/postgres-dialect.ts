import type { OperationIdentity } from '../../core/operation-identity.js';
import type { OperationRecord } from '../../core/operation-record.js';
import type { Existing } from '../../core/receipt.js';
import { andThen } from '../../core/steps.js';
import { numberedPlaceholders } from '../sql/shared-sql.js';
import type { SqlConnection, SqlDialect } from '../sql/sql-driver.js';
import {
  identityParams,
  OPERATION_COLUMNS,
  operationParams,
  toRecord,
  type OperationRow,
} from '../operation-rows.js';
import { callStatements } from './call-statements.js';

const CALL = callStatements();

type FoundRow = { source: string; data: string };

/** The one row FIND answers (the identity's own version, else the oldest; a record first). */
function existingOf(identity: OperationIdentity, rows: readonly FoundRow[]): Existing | undefined {
  const found = rows[0];
  if (found === undefined) return undefined;
  if (found.source === 'operation')
    return { kind: 'receipt', receipt: toRecord(JSON.parse(found.data) as OperationRow) };
  const row = JSON.parse(found.data) as {
    version: number;
    fingerprint: string;
    receipt_expired_at: number;
    expires_at: number;
  };
  return {
    kind: 'tombstone',
    tombstone: {
      identity: { ...identity, version: Number(row.version) },
      fingerprint: row.fingerprint,
      receiptExpiredAt: Number(row.receipt_expired_at),
      expiresAt: Number(row.expires_at),
    },
  };
}

/**
 * PostgreSQL's words: `$n` placeholders, row locks (`FOR UPDATE`, `SKIP LOCKED` for claims and
 * sweeps), booleans, and the call statements of `call-statements.ts` (a lookup whose result type
 * never depends on the table's columns, and a guarded insert for optimistic first executions).
 */
export const postgresDialect: SqlDialect = {
  engine: 'postgres',
  placeholders: numberedPlaceholders,
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  forUpdate: ' FOR UPDATE',
  bool: (value) => value,
  call: {
    find(conn: SqlConnection, identity: OperationIdentity) {
      return andThen(conn.all<FoundRow>(CALL.find, identityParams(identity)), (rows) =>
        existingOf(identity, rows),
      );
    },
    upsert(conn: SqlConnection, record: OperationRecord) {
      return andThen(conn.run(CALL.upsert, pgParams(record)), () => undefined);
    },
    insertNew(conn: SqlConnection, record: OperationRecord) {
      return andThen(
        conn.all<{ inserted: number; tombstoned: boolean }>(CALL.insertNew, pgParams(record)),
        (rows) => rows[0]?.inserted === 1 && rows[0]?.tombstoned === false,
      );
    },
  },
};

/** A record's row with `dispatched` as a boolean. */
function pgParams(record: OperationRecord): (string | number | boolean | null)[] {
  const params = operationParams(record) as (string | number | boolean | null)[];
  params[DISPATCHED] = record.dispatched;
  return params;
}

const DISPATCHED = OPERATION_COLUMNS.indexOf('dispatched');
