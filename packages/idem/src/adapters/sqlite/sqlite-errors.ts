import { resolve } from 'node:path';
import { IdemError, isIdemError, storageUnavailable } from '../../core/errors.js';

/** True for SQLITE_BUSY and SQLITE_LOCKED in all their extended forms. */
export function isSqliteBusy(error: unknown): boolean {
  const code = driverCode(error);
  return code !== undefined && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** A hint for when a full disk may have room again. */
const DISK_FULL_RETRY_MS = 1000;

/**
 * Translates a driver error into Idem's closed set; IdemErrors pass through unchanged. `path` is the
 * database file (better-sqlite3's `name`), named in `unavailable` messages and their cause.
 *
 * `unavailable` when the storage itself cannot take the write: a full disk (retryable, once space is
 * freed), a read-only database, an I/O error, a file that cannot be opened or is not a database
 * (not retryable: an operator must act). SQLite rolls such a write back, so nothing was committed,
 * except after an I/O error in COMMIT's own fsync, where the frames may reach the disk after all;
 * the next action therefore says a retry with the same key is safe either way.
 */
export function translateSqliteError(error: unknown, retryAfterMs: number, path?: string): IdemError {
  if (isIdemError(error)) return error;
  if (isSqliteBusy(error)) {
    return new IdemError('busy', 'the database is busy; nothing was changed', { retryAfterMs, cause: error });
  }
  const code = driverCode(error);
  const file = absolutePath(path);
  const fault = code === undefined ? undefined : storageFault(code, file === undefined ? '' : ` at ${file}`);
  if (code !== undefined && fault !== undefined) {
    return storageUnavailable(fault.message, {
      retryable: fault.retryable,
      ...(fault.retryable ? { retryAfterMs: DISK_FULL_RETRY_MS } : {}),
      cause: {
        driverCode: code,
        ...(file === undefined ? {} : { path: file }),
      },
    });
  }
  return new IdemError('internal', 'database error; the transaction was rolled back', { cause: error });
}

function storageFault(code: string, at: string): { message: string; retryable: boolean } | undefined {
  if (code.startsWith('SQLITE_FULL')) {
    return {
      message: `the database disk is full (SQLITE_FULL)${at}; nothing was committed`,
      retryable: true,
    };
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return { message: `the database${at} is read-only (${code}); nothing was committed`, retryable: false };
  }
  if (code.startsWith('SQLITE_IOERR')) {
    return {
      message: `an I/O error (${code}) on the database${at}; the transaction was rolled back`,
      retryable: false,
    };
  }
  if (code.startsWith('SQLITE_CANTOPEN')) {
    return { message: `cannot open the database file${at} (SQLITE_CANTOPEN)`, retryable: false };
  }
  if (code.startsWith('SQLITE_CORRUPT')) {
    return { message: `the database file${at} is corrupt (${code})`, retryable: false };
  }
  if (code.startsWith('SQLITE_NOTADB')) {
    return { message: `the file${at} is not a SQLite database (SQLITE_NOTADB)`, retryable: false };
  }
  return undefined;
}

/** The absolute path of a database file, or undefined for an in-memory one or an unknown one. */
export function absolutePath(path: string | undefined): string | undefined {
  return path === undefined || path === '' || path === ':memory:' ? undefined : resolve(path);
}

/** An error SQLite raised, through better-sqlite3 (a `SQLITE_*` code) or node:sqlite (an `errcode`). */
export function isSqliteError(error: unknown): boolean {
  return driverCode(error)?.startsWith('SQLITE_') === true;
}

/**
 * SQLite's primary result codes by number, as node:sqlite reports them (`errcode`, an extended code
 * whose low byte is the primary one); better-sqlite3 names them itself.
 */
const PRIMARY_CODES: Readonly<Record<number, string>> = {
  1: 'SQLITE_ERROR',
  2: 'SQLITE_INTERNAL',
  3: 'SQLITE_PERM',
  4: 'SQLITE_ABORT',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM',
  8: 'SQLITE_READONLY',
  9: 'SQLITE_INTERRUPT',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  12: 'SQLITE_NOTFOUND',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  15: 'SQLITE_PROTOCOL',
  17: 'SQLITE_SCHEMA',
  18: 'SQLITE_TOOBIG',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  21: 'SQLITE_MISUSE',
  23: 'SQLITE_AUTH',
  25: 'SQLITE_RANGE',
  26: 'SQLITE_NOTADB',
};

/**
 * The `SQLITE_*` code of a driver error: better-sqlite3's `code`, or for node:sqlite (`code`
 * `ERR_SQLITE_ERROR`) the primary code's name of its numeric `errcode`, with the extended number
 * after it when there is one (`SQLITE_IOERR_3082`). Otherwise the error's own string `code`.
 */
export function sqliteErrorCode(error: unknown): string | undefined {
  return driverCode(error);
}

function driverCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ERR_SQLITE_ERROR') {
    const errcode = (error as { errcode?: unknown }).errcode;
    if (typeof errcode === 'number') {
      const primary = PRIMARY_CODES[errcode & 0xff];
      if (primary !== undefined) return errcode > 0xff ? `${primary}_${errcode}` : primary;
    }
  }
  return typeof code === 'string' ? code : undefined;
}
