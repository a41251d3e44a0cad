import { IdemError } from '../../core/errors.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { Existing } from '../../core/receipt.js';
import type { OperationRecord } from '../../core/operation-record.js';
import { andThen } from '../../core/steps.js';
import { numberedPlaceholders } from '../sql/shared-sql.js';
import type { SqlConnection, SqlDialect } from '../sql/sql-driver.js';
import { identityParams, OPERATION_COLUMNS, operationParams } from '../operation-rows.js';
import { existingOfFound } from '../sql/found-row.js';
import { callStatements } from './call-statements.js';

const CALL = callStatements();

/**
 * PostgreSQL's words: `$n` placeholders, row locks (`FOR UPDATE`, `SKIP LOCKED` for claims and
 * sweeps), booleans, and the call statements of `call-statements.ts` (a narrow lookup whose result
 * type never depends on the table's set of columns, and a guarded insert for optimistic first
 * executions).
 */
export const postgresDialect: SqlDialect = {
  engine: 'postgres',
  placeholders: numberedPlaceholders,
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  forUpdate: ' FOR UPDATE',
  bool: (value) => value,
  call: {
    find(conn: SqlConnection, identity: OperationIdentity) {
      return andThen(conn.all<{ found: string | null }>(CALL.find, identityParams(identity)), (rows) =>
        existingOfText(identity, rows[0]?.found),
      );
    },
    findMany(conn: SqlConnection, identities: readonly OperationIdentity[]) {
      const keys = JSON.stringify(identities.map(identityParams));
      return andThen(conn.all<{ found: string | null }>(CALL.findMany, [keys]), (rows) => {
        // A missing row must never read as "nothing found" (that would run the call again).
        if (rows.length !== identities.length) {
          throw new IdemError(
            'internal',
            `a lookup of ${identities.length} keys answered ${rows.length} rows`,
          );
        }
        return identities.map((identity, i) => existingOfText(identity, rows[i]?.found));
      });
    },
    upsert(conn: SqlConnection, record: OperationRecord) {
      return andThen(conn.run(CALL.upsert, pgParams(record)), () => undefined);
    },
    insertNew(conn: SqlConnection, record: OperationRecord) {
      return andThen(conn.run(CALL.insertNew, pgParams(record)), (changed) => changed === 1);
    },
  },
};

/** The record or tombstone of `idem_find`'s answer (a JSON array in FOUND_COLUMNS order, or NULL). */
function existingOfText(identity: OperationIdentity, found: string | null | undefined): Existing | undefined {
  return existingOfFound(
    identity,
    found === undefined || found === null ? undefined : (JSON.parse(found) as unknown[]),
  );
}

/** A record's row with `dispatched` as a boolean. */
function pgParams(record: OperationRecord): (string | number | boolean | null)[] {
  const params = operationParams(record) as (string | number | boolean | null)[];
  params[DISPATCHED] = record.dispatched;
  return params;
}

const DISPATCHED = OPERATION_COLUMNS.indexOf('dispatched');
