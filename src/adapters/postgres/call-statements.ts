import { createHash } from 'node:crypto';
import type { OperationIdentity } from '../../core/operation-identity.js';
import { identityParams, OPERATION_COLUMNS } from '../operation-rows.js';
import type { PgQueryConfig } from './postgres-pool.js';

/** The identity's columns, in the order of `identityParams` (and of the primary keys). */
const PK_COLUMNS: readonly string[] = ['principal', 'workspace', 'operation', 'version', 'idem_key'];

/** The identity of a record or tombstone, as five parameters of a statement from `$first` on. */
function identityWhere(first: number): string {
  return PK_COLUMNS.map((column, i) => `${column} = $${first + i}`).join(' AND ');
}

/** The identity of a record or tombstone, as the first five parameters of a statement. */
export const IDENTITY_WHERE = identityWhere(1);
const COLUMNS = OPERATION_COLUMNS.join(', ');
const VALUES = OPERATION_COLUMNS.map((_, i) => `$${i + 1}`).join(', ');
const UPSERT = `INSERT INTO idem_operations (${COLUMNS}) VALUES (${VALUES})
  ON CONFLICT (${PK_COLUMNS.join(', ')}) DO UPDATE SET ${OPERATION_COLUMNS.filter(
    (c) => !PK_COLUMNS.includes(c),
  )
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')}`;

/** A 64-bit advisory lock key per identity (a collision only serializes two unrelated calls). */
export function identityLockKey(identity: OperationIdentity): bigint {
  return createHash('sha256')
    .update(JSON.stringify(identityParams(identity)))
    .digest()
    .readBigInt64BE(0);
}

/**
 * What a call sends to PostgreSQL besides its effect: the identity's lookup, the record's upsert,
 * and the guarded insert of a first execution whose caller found nothing.
 */
export interface CallStatements {
  find: PgQueryConfig;
  upsert: PgQueryConfig;
  /**
   * The record of a first execution, written only where the identity has neither a record (the
   * primary key: DO NOTHING) nor a tombstone; answers `inserted` (0 or 1) and `tombstoned`.
   */
  insertNew: PgQueryConfig;
}

/**
 * The statements every call sends, named or not. The names carry a version: a statement whose text
 * changes must get a new name, since node-postgres refuses one name for two texts on a connection.
 * Their result types never depend on the table's columns (`row_to_json`, or no rows), so a
 * migration that adds a column cannot invalidate a plan cached on a live connection.
 */
export function callStatements(named: boolean): CallStatements {
  const find = `SELECT 'operation' AS source, row_to_json(o)::text AS data FROM idem_operations o WHERE ${IDENTITY_WHERE}
     UNION ALL
     SELECT 'tombstone', row_to_json(t)::text FROM idem_tombstones t WHERE ${IDENTITY_WHERE}`;
  // The record's own parameters: $1 is operation_id, the identity follows (OPERATION_COLUMNS).
  const insertNew = `WITH inserted AS (
       INSERT INTO idem_operations (${COLUMNS}) VALUES (${VALUES})
       ON CONFLICT DO NOTHING RETURNING 1)
     SELECT (SELECT count(*) FROM inserted)::int AS inserted,
       EXISTS (SELECT 1 FROM idem_tombstones WHERE ${identityWhere(2)}) AS tombstoned`;
  return named
    ? {
        find: { name: 'idem_find_v1', text: find },
        upsert: { name: 'idem_upsert_v2', text: UPSERT },
        insertNew: { name: 'idem_insert_new_v2', text: insertNew },
      }
    : { find: { text: find }, upsert: { text: UPSERT }, insertNew: { text: insertNew } };
}
