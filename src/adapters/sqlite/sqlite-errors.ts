import { IdemError, isIdemError } from '../../core/errors.js';

/** True for SQLITE_BUSY and SQLITE_LOCKED in all their extended forms. */
export function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** Translates a driver error into Idem's closed set; IdemErrors pass through unchanged. */
export function translateSqliteError(error: unknown, retryAfterMs: number): IdemError {
  if (isIdemError(error)) return error;
  if (isSqliteBusy(error)) {
    return new IdemError('busy', 'the database is busy; nothing was changed', { retryAfterMs, cause: error });
  }
  return new IdemError('internal', 'database error; the transaction was rolled back', { cause: error });
}
