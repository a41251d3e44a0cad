import { IdemError, isIdemError, storageUnavailable } from '../../core/errors.js';
import type { PgPool } from './postgres-pool.js';

/** SQLSTATEs after which the whole transaction can simply run again. */
const RETRY_IN_ADAPTER = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/** Lock waits beyond `lock_timeout`, and statement timeouts: nothing was committed. */
const BUSY = new Set(['55P03', '57014']); // lock_not_available, query_canceled (statement_timeout)

/** Where a pool connects, for messages and logs: `host:port` and the database, never a password. */
export interface PgTarget {
  readonly server: string;
  readonly database: string | undefined;
}

/** The server and database `pool` connects to, as node-postgres resolves them (URL first). */
export function pgTarget(pool: PgPool): PgTarget {
  const options = pool.options ?? {};
  let host: string | undefined;
  let port: string | undefined;
  let database: string | undefined;
  if (options.connectionString !== undefined) {
    try {
      const url = new URL(options.connectionString);
      host = decodeURIComponent(url.hostname) || url.searchParams.get('host') || undefined;
      port = url.port || undefined;
      database = decodeURIComponent(url.pathname.slice(1)) || undefined;
    } catch {
      // not a URL: node-postgres will say so itself
    }
  }
  host ??= options.host ?? process.env.PGHOST ?? 'localhost';
  port ??= String(options.port ?? process.env.PGPORT ?? 5432);
  database ??= options.database ?? process.env.PGDATABASE;
  return { server: `${host}:${port}`, database };
}

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

export function isRetryableInAdapter(error: unknown): boolean {
  return RETRY_IN_ADAPTER.has(sqlState(error) ?? '');
}

/**
 * True when the connection itself failed (terminated backend, reset socket, server shutdown): the
 * transaction is gone, and if this happened during COMMIT nobody knows whether it committed.
 */
export function isConnectionLoss(error: unknown): boolean {
  const state = sqlState(error);
  // 08P01 (protocol_violation) is in the connection class, but the server reports it on a live
  // connection, e.g. for a query with the wrong number of parameters: the caller's bug, not a loss.
  if (state !== undefined) return (state.startsWith('08') && state !== '08P01') || state.startsWith('57P');
  const code = (error as { code?: unknown } | null)?.code;
  const message = (error as { message?: unknown } | null)?.message;
  return (
    code === 'ECONNRESET' ||
    code === 'ECONNREFUSED' ||
    code === 'EPIPE' ||
    (typeof message === 'string' &&
      /Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(
        message,
      ))
  );
}

/**
 * node-postgres's pool gave up waiting for a free connection (`connectionTimeoutMillis`): no
 * statement ran. An ORM on a pg Pool (Kysely, Drizzle, Prisma's adapter) reports it from its own
 * transaction or query call, so it reaches translatePgError as well as translateConnectError.
 */
export function isPoolWaitTimeout(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && /timeout exceeded when trying to connect/i.test(message);
}

function poolBusy(error: unknown): IdemError {
  return new IdemError('busy', 'every database connection of this process is in use; nothing was done', {
    retryAfterMs: 100,
    cause: error,
  });
}

/**
 * A connection could not be taken from the pool or opened: nothing was done. A wait for a pooled
 * connection that timed out is `busy` (this process's own connections are all in use); a server
 * that refuses, is not there, has no such database or refuses the login is `unavailable`.
 */
export function translateConnectError(error: unknown, target?: PgTarget): IdemError {
  if (isIdemError(error)) return error;
  if (isPoolWaitTimeout(error)) return poolBusy(error);
  return (
    connectFault(error, target) ??
    (isConnectionLoss(error)
      ? translatePgError(error, target === undefined ? {} : { target })
      : unavailable(
          error,
          target,
          `cannot connect to PostgreSQL at ${serverOf(error, target)} (${driverCodeOf(error)})`,
          false,
        ))
  );
}

/**
 * Translates a driver error into Idem's closed set; IdemErrors pass through unchanged.
 * `duringCommit`: the error came from COMMIT itself, so the outcome is not known. `target` names
 * the server in `unavailable` messages and their cause.
 */
export function translatePgError(
  error: unknown,
  options: { duringCommit?: boolean; target?: PgTarget } = {},
): IdemError {
  if (isIdemError(error)) return error;
  // Before any statement: nothing ran, also when the caller was about to COMMIT.
  if (isPoolWaitTimeout(error)) return poolBusy(error);
  const { target } = options;
  if (isConnectionLoss(error) && options.duringCommit) {
    return new IdemError('outcome_unknown', 'the database connection was lost during COMMIT', {
      retryable: true,
      retryAfterMs: 100,
      cause: error,
      nextAction:
        'Retry with the same idempotency_key and arguments: the retry finds the committed result or runs once.',
    });
  }
  const fault = connectFault(error, target);
  if (fault !== undefined) return fault;
  const server = serverOf(error, target);
  if (isConnectionLoss(error)) {
    return unavailable(
      error,
      target,
      `the connection to PostgreSQL at ${server} was lost (${driverCodeOf(error)}); nothing was committed`,
      true,
      100,
    );
  }
  const state = sqlState(error);
  if (BUSY.has(state ?? '') || isRetryableInAdapter(error)) {
    return new IdemError('busy', 'the database is busy; nothing was changed', {
      retryAfterMs: 100,
      cause: error,
    });
  }
  const storage = state === undefined ? undefined : STORAGE_FAULTS[state];
  if (storage !== undefined) {
    return unavailable(
      error,
      target,
      `PostgreSQL at ${server} ${storage.what} (${state}); nothing was committed`,
      storage.retryable,
    );
  }
  return new IdemError('internal', 'database error; the transaction was rolled back', { cause: error });
}

/** Server-side conditions of the storage itself, by SQLSTATE. */
const STORAGE_FAULTS: Record<string, { what: string; retryable: boolean }> = {
  '53100': { what: 'has a full disk', retryable: true }, // disk_full
  '53200': { what: 'is out of memory', retryable: true }, // out_of_memory
  '53000': { what: 'has insufficient resources', retryable: true }, // insufficient_resources
  '25006': { what: 'accepts no writes: the transaction is read-only', retryable: false }, // read_only_sql_transaction
  '58030': { what: 'reported an I/O error', retryable: false }, // io_error
  XX001: { what: 'reported corrupted data', retryable: false }, // data_corrupted
  XX002: { what: 'reported a corrupted index', retryable: false }, // index_corrupted
};

/** A server that refuses, cannot be found or reached, has no such database or refuses the login. */
function connectFault(error: unknown, target: PgTarget | undefined): IdemError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const message = (error as { message?: unknown } | null)?.message;
  const server = serverOf(error, target);
  switch (code) {
    case 'ECONNREFUSED':
      return unavailable(
        error,
        target,
        `PostgreSQL at ${server} refused the connection (ECONNREFUSED)`,
        true,
      );
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EAI_AGAIN':
      return unavailable(error, target, `PostgreSQL at ${server} cannot be reached (${code})`, true);
    case 'ENOTFOUND':
      return unavailable(
        error,
        target,
        `the host of PostgreSQL at ${server} was not found (ENOTFOUND)`,
        false,
      );
    case '3D000': {
      const name = target?.database === undefined ? '' : ` ${JSON.stringify(target.database)}`;
      return unavailable(error, target, `PostgreSQL at ${server} has no database${name} (3D000)`, false);
    }
    case '28P01':
    case '28000':
      return unavailable(error, target, `PostgreSQL at ${server} refused the login (${code})`, false);
    case '53300':
      return unavailable(error, target, `PostgreSQL at ${server} has too many connections (53300)`, true);
    case '57P03':
      return unavailable(
        error,
        target,
        `PostgreSQL at ${server} is not accepting connections now (57P03)`,
        true,
      );
  }
  if (typeof message === 'string' && /connection timeout/i.test(message)) {
    return unavailable(
      error,
      target,
      `PostgreSQL at ${server} did not answer within the connect timeout`,
      true,
    );
  }
  return undefined;
}

function unavailable(
  error: unknown,
  target: PgTarget | undefined,
  message: string,
  retryable: boolean,
  retryAfterMs = 1000,
): IdemError {
  const server = knownServer(error, target);
  return storageUnavailable(message, {
    retryable,
    ...(retryable ? { retryAfterMs } : {}),
    cause: { driverCode: driverCodeOf(error), ...(server === undefined ? {} : { server }) },
  });
}

/** `host:port` as configured, else as the socket error reports it, else "the server". */
function serverOf(error: unknown, target: PgTarget | undefined): string {
  return knownServer(error, target) ?? 'the server';
}

function knownServer(error: unknown, target: PgTarget | undefined): string | undefined {
  if (target !== undefined) return target.server;
  const { address, port } = (error ?? {}) as { address?: unknown; port?: unknown };
  return typeof address === 'string' && port !== undefined ? `${address}:${String(port)}` : undefined;
}

/** The driver's code, or a name for the few node-postgres failures that carry none. */
function driverCodeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const message = String((error as { message?: unknown } | null)?.message ?? '');
  if (/connection timeout/i.test(message)) return 'connect_timeout';
  if (/Connection terminated/i.test(message)) return 'connection_terminated';
  if (/not queryable/i.test(message)) return 'connection_not_queryable';
  return 'connection_error';
}
