import { isIdemError } from '../../core/errors.js';
import { translateSqliteError } from '../../adapters/sqlite/sqlite-errors.js';
import { SQLITE_BUSY_RETRY_MS } from '../../adapters/sqlite/lock-wait.js';

/**
 * An error out of an ORM's SQLite transaction, translated when it is better-sqlite3's (a `code`
 * starting with SQLITE_, itself or as the `cause` of the ORM's wrapper); an IdemError or the
 * application's own error is returned as it is.
 */
export function translateSqliteOrmError(error: unknown, path?: string): unknown {
  if (isIdemError(error)) return error;
  const cause = sqliteDriverError(error);
  return cause === undefined ? error : translateSqliteError(cause, SQLITE_BUSY_RETRY_MS, path);
}

/** better-sqlite3's error itself, or under one wrapper's `cause` (Drizzle's DrizzleQueryError). */
export function sqliteDriverError(error: unknown): unknown {
  for (let candidate = error, depth = 0; depth < 2; depth += 1) {
    const code = (candidate as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && code.startsWith('SQLITE_')) return candidate;
    candidate = (candidate as { cause?: unknown } | null)?.cause;
  }
  return undefined;
}
