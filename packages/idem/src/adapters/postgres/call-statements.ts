import { hash } from 'node:crypto';
import type { OperationIdentity } from '../../core/operation-identity.js';
import { identityParams, OPERATION_COLUMNS } from '../operation-rows.js';
import type { PgQueryConfig } from './postgres-pool.js';

/** The identity's columns, in the order of `identityParams` (ON CONFLICT names the primary key by its columns, in any order). */
const PK_COLUMNS: readonly string[] = ['principal', 'workspace', 'operation', 'version', 'idem_key'];

const COLUMNS = OPERATION_COLUMNS.join(', ');
const VALUES = OPERATION_COLUMNS.map((_, i) => `$${i + 1}`).join(', ');
const UPSERT = `INSERT INTO idem_operations (${COLUMNS}) VALUES (${VALUES})
  ON CONFLICT (${PK_COLUMNS.join(', ')}) DO UPDATE SET ${OPERATION_COLUMNS.filter(
    (c) => !PK_COLUMNS.includes(c),
  )
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')}`;

/** The key in any version of its operation, as four parameters from `$first` (principal, workspace, operation, key). */
function keyWhere(first: number, key: number): string {
  return `principal = $${first} AND workspace = $${first + 1} AND operation = $${first + 2} AND idem_key = $${key}`;
}

/**
 * A 64-bit advisory lock key per idempotency key: principal, workspace, operation and key, in
 * every version of the operation (so that calls with one key at two versions serialize; a
 * collision only serializes two unrelated calls).
 */
export function identityLockKey(identity: OperationIdentity): bigint {
  const [principal, workspace, operation, , key] = identityParams(identity);
  return hash(
    'sha256',
    JSON.stringify(['key', principal, workspace, operation, key]),
    'buffer',
  ).readBigInt64BE(0);
}

/**
 * What a call sends to PostgreSQL besides its effect: the identity's lookup, the record's upsert,
 * and the guarded insert of a first execution whose caller found nothing.
 */
export interface CallStatements {
  /**
   * The record or tombstone of the key in any version of its operation (parameters: the identity):
   * the identity's own version wins, else the oldest, and a record before a tombstone. Reads only
   * FOUND_COLUMNS (what a call decides on and answers with), never the whole record, as one text
   * column `found`: a JSON array of them in that order, or NULL (the function `idem_find`).
   */
  find: PgQueryConfig;
  /**
   * `find` of several identities (one parameter: a JSON array of their `identityParams`), one row
   * `found` per identity, in their order.
   */
  findMany: PgQueryConfig;
  upsert: PgQueryConfig;
  /**
   * The record of a first execution, written only where the key has neither a record (in any
   * version; the primary key's DO NOTHING for its own) nor a tombstone (in any version): one row
   * changed, or none and nothing written. Run under the key's advisory lock, which every version
   * shares.
   */
  insertNew: PgQueryConfig;
}

/**
 * The statements every call sends, each with a name (a connection without prepared statements
 * sends them unnamed; see PostgresConnection). The names carry a version: a statement whose text
 * changes must get a new name, since node-postgres refuses one name for two texts on a connection.
 * Their result types never depend on the table's set of columns (named columns, or no rows), so a
 * migration that adds a column cannot invalidate a plan cached on a live connection.
 */
export function callStatements(): CallStatements {
  // The function of schema version 7 (postgres-schema.ts): one text column, or NULL.
  const find = 'SELECT idem_find($1, $2, $3, $4, $5) AS found';
  // One text parameter rather than five arrays, so that every driver and ORM sends it alike.
  const findMany = `SELECT idem_find(e->>0, e->>1, e->>2, (e->>3)::int, e->>4) AS found
     FROM json_array_elements($1::json) WITH ORDINALITY AS keys(e, n) ORDER BY n`;
  // The record's own parameters: $1 is operation_id, the identity follows (OPERATION_COLUMNS). A
  // plain INSERT … SELECT whose count answers: no CTE, no RETURNING, no row to describe and parse
  // (issue 27: first executions 1.07x, 1.12x and 1.06x per second at 1, 8 and 64 in flight against
  // the CTE that counted its RETURNING rows and read the tombstone apart).
  const insertNew = `INSERT INTO idem_operations (${COLUMNS}) SELECT ${VALUES}
     WHERE NOT EXISTS (SELECT 1 FROM idem_operations WHERE ${keyWhere(2, 6)})
       AND NOT EXISTS (SELECT 1 FROM idem_tombstones WHERE ${keyWhere(2, 6)})
     ON CONFLICT DO NOTHING`;
  return {
    find: { name: 'idem_find_v4', text: find },
    findMany: { name: 'idem_find_many_v1', text: findMany },
    upsert: { name: 'idem_upsert_v3', text: UPSERT },
    insertNew: { name: 'idem_insert_new_v5', text: insertNew },
  };
}
