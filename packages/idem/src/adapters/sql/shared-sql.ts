import type { SqlDialect, SqlStatement } from './sql-driver.js';

const ACTIVE = "('accepted', 'running', 'cancel_requested')";
const FINAL = "('succeeded', 'failed', 'cancelled')";
const IDENTITY = 'principal, workspace, operation, version, idem_key';

/** Statement names carry a version: a text that changes must get a new name (node-postgres). */
const VERSION = 'v1';

/**
 * Every statement the ledger, the outbox and housekeeping send, written once with `?`
 * placeholders; the dialect turns them into its own. Orders are total (ties broken by id), so
 * both engines list, claim and sweep in the same order.
 */
export function sharedSql(dialect: SqlDialect) {
  const s = (name: string, text: string): SqlStatement => ({
    text: dialect.placeholders(text),
    name: `idem_${VERSION}_${name}`,
  });
  return {
    byId: s('by_id', 'SELECT * FROM idem_operations WHERE operation_id = ?'),
    byIdForUpdate: s(
      'by_id_lock',
      `SELECT * FROM idem_operations WHERE operation_id = ?${dialect.forUpdate}`,
    ),
    countByState: s('count_by_state', 'SELECT status, COUNT(*) AS n FROM idem_operations GROUP BY status'),
    // The partial index idem_operations_open's own WHERE, word for word (SQLite needs it so).
    countOpenByState: s(
      'count_open_by_state',
      "SELECT status, COUNT(*) AS n FROM idem_operations WHERE status IN ('accepted', 'running', 'cancel_requested', 'outcome_unknown') GROUP BY status",
    ),
    /**
     * `list` (ledger ListOptions): `where` are conditions with `?` placeholders (a state
     * is inlined as a literal by the caller, so that a partial index on the open states can serve
     * it); not a named statement, as the set of filters varies.
     */
    listWhere: (where: readonly string[], order: 'newest' | 'oldest'): SqlStatement => {
      const dir = order === 'oldest' ? 'ASC' : 'DESC';
      const clause = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
      return {
        text: dialect.placeholders(
          `SELECT * FROM idem_operations${clause} ORDER BY operation_id ${dir} LIMIT ?`,
        ),
      };
    },
    deleteTombstone: s(
      'delete_tombstone',
      `DELETE FROM idem_tombstones WHERE principal = ? AND workspace = ? AND operation = ? AND version = ? AND idem_key = ?`,
    ),
    attempts: s('attempts', 'SELECT * FROM idem_attempts WHERE operation_id = ? ORDER BY number'),
    claim: s(
      'claim',
      `UPDATE idem_operations SET lease_owner = ?, lease_expires_at = ?
       WHERE operation_id = (SELECT operation_id FROM idem_operations
         WHERE status IN ${ACTIVE} AND kind = 'durable'
           AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
           AND (next_attempt_at IS NULL OR next_attempt_at <= ?)
         ORDER BY COALESCE(next_attempt_at, created_at), created_at, operation_id LIMIT 1${dialect.skipLocked})
       RETURNING *`,
    ),
    closeOpenAttempts: s(
      'close_attempts',
      'UPDATE idem_attempts SET ended_at = ?, outcome = ?, detail = ? WHERE operation_id = ? AND ended_at IS NULL',
    ),
    renew: s(
      'renew',
      `UPDATE idem_operations SET lease_expires_at = ?
       WHERE operation_id = ? AND lease_owner = ? AND lease_expires_at > ?`,
    ),
    patch: s(
      'patch',
      `UPDATE idem_operations SET status = ?, resource_id = ?, result_json = ?, error_json = ?, expires_at = ?,
         dispatched = ?, next_attempt_at = ?, lease_owner = ?, lease_expires_at = ?, updated_at = ?,
         attempt_count = ?, cancel_requested_at = ?, resolved_by = ?, resolved_at = ?, audit_json = ?
       WHERE operation_id = ? RETURNING *`,
    ),
    insertAttempt: s(
      'insert_attempt',
      'INSERT INTO idem_attempts (attempt_id, operation_id, number, worker_id, started_at) VALUES (?, ?, ?, ?, ?)',
    ),
    finishAttempt: s(
      'finish_attempt',
      'UPDATE idem_attempts SET ended_at = ?, outcome = ?, detail = ? WHERE attempt_id = ?',
    ),

    enqueue: s(
      'enqueue',
      `INSERT INTO idem_outbox (dedup_key, destination, payload_json, created_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (dedup_key) DO NOTHING`,
    ),
    claimOutbox: s(
      'claim_outbox',
      `UPDATE idem_outbox SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
       WHERE id IN (SELECT id FROM idem_outbox
         WHERE dispatched_at IS NULL AND dead_at IS NULL AND next_attempt_at <= ?
           AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
         ORDER BY id LIMIT ?${dialect.skipLocked})
       RETURNING *`,
    ),
    delivered: s(
      'delivered',
      `UPDATE idem_outbox SET dispatched_at = ?, lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND lease_owner = ?`,
    ),
    retry: s(
      'retry',
      `UPDATE idem_outbox SET next_attempt_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND lease_owner = ?`,
    ),
    dead: s(
      'dead',
      `UPDATE idem_outbox SET dead_at = ?, last_error = ?, lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND lease_owner = ? AND dispatched_at IS NULL AND dead_at IS NULL`,
    ),
    deadLetters: s(
      'dead_letters',
      'SELECT * FROM idem_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at, id LIMIT ?',
    ),
    requeue: s(
      'requeue',
      `UPDATE idem_outbox SET dead_at = NULL, attempts = 0, next_attempt_at = ?, lease_owner = NULL,
         lease_expires_at = NULL
       WHERE id = ? AND dead_at IS NOT NULL RETURNING *`,
    ),

    expired: s(
      'expired',
      `SELECT operation_id FROM idem_operations WHERE expires_at <= ? AND status IN ${FINAL}
       ORDER BY expires_at, operation_id LIMIT ?${dialect.skipLocked}`,
    ),
    deleteTombstones: s(
      'delete_tombstones',
      `DELETE FROM idem_tombstones WHERE (${IDENTITY}) IN (SELECT ${IDENTITY} FROM idem_tombstones
         WHERE expires_at <= ? ORDER BY expires_at LIMIT ?${dialect.skipLocked})`,
    ),
    deleteDelivered: s(
      'delete_delivered',
      `DELETE FROM idem_outbox WHERE id IN (SELECT id FROM idem_outbox
         WHERE dispatched_at IS NOT NULL AND dispatched_at <= ? ORDER BY dispatched_at, id LIMIT ?${dialect.skipLocked})`,
    ),
    /** The expired batch's statements, for `count` ids; their text varies, so they are not named. */
    expiredBatch(count: number) {
      const ids = Array.from({ length: count }, () => '?').join(', ');
      const text = (sql: string): SqlStatement => ({ text: dialect.placeholders(sql) });
      return {
        tombstone: text(
          `INSERT INTO idem_tombstones (${IDENTITY}, fingerprint, receipt_expired_at, expires_at)
           SELECT ${IDENTITY}, fingerprint, expires_at, expires_at + ? FROM idem_operations WHERE operation_id IN (${ids})
           ON CONFLICT (${IDENTITY}) DO UPDATE SET fingerprint = excluded.fingerprint,
             receipt_expired_at = excluded.receipt_expired_at, expires_at = excluded.expires_at`,
        ),
        deleteAttempts: text(`DELETE FROM idem_attempts WHERE operation_id IN (${ids})`),
        deleteOperations: text(`DELETE FROM idem_operations WHERE operation_id IN (${ids})`),
      };
    },
  };
}

export type SharedSql = ReturnType<typeof sharedSql>;

/** `?` to `$1`, `$2`, ...: Idem's statements hold no `?` inside literals. */
export function numberedPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${(n += 1)}`);
}
