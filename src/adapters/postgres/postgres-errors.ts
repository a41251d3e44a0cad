import { IdemError, isIdemError } from '../../core/errors.js';

/** SQLSTATEs after which the whole transaction can simply run again. */
const RETRY_IN_ADAPTER = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/** Lock waits beyond `lock_timeout`, and statement timeouts: nothing was committed. */
const BUSY = new Set(['55P03', '57014']); // lock_not_available, query_canceled (statement_timeout)

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

/** A connection could not be opened at all: nothing was done. */
export function translateConnectError(error: unknown): IdemError {
  if (isIdemError(error)) return error;
  return new IdemError('busy', 'cannot connect to the database; nothing was done', {
    retryAfterMs: 1000,
    cause: error,
  });
}

/**
 * Translates a driver error into Idem's closed set; IdemErrors pass through unchanged.
 * `duringCommit`: the error came from COMMIT itself, so the outcome is not known.
 */
export function translatePgError(error: unknown, options: { duringCommit?: boolean } = {}): IdemError {
  if (isIdemError(error)) return error;
  if (isConnectionLoss(error)) {
    if (options.duringCommit) {
      return new IdemError('outcome_unknown', 'the database connection was lost during COMMIT', {
        retryable: true,
        retryAfterMs: 100,
        cause: error,
        nextAction:
          'Retry with the same idempotency_key and arguments: the retry finds the committed result or runs once.',
      });
    }
    return new IdemError('busy', 'the database connection was lost; nothing was committed', {
      retryAfterMs: 100,
      cause: error,
    });
  }
  const state = sqlState(error);
  if (BUSY.has(state ?? '') || isRetryableInAdapter(error)) {
    return new IdemError('busy', 'the database is busy; nothing was changed', {
      retryAfterMs: 100,
      cause: error,
    });
  }
  return new IdemError('internal', 'database error; the transaction was rolled back', { cause: error });
}
