import { systemClock, type Clock } from '../../core/clock.js';
import { isIdemError, type IdemError } from '../../core/errors.js';
import type { SqlTransactionOptions } from '../sql/sql-driver.js';
import { identityLockKey } from './call-statements.js';
import {
  isConnectionLoss,
  isRetryableInAdapter,
  translatePgError,
  type PgTarget,
} from './postgres-errors.js';

/** `lockTimeoutMs` when none is given: a lock wait beyond 5 s answers `busy`. */
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;

/** Re-runs of a transaction after a serialization failure or deadlock when none is given. */
export const DEFAULT_MAX_RETRIES = 5;

/** The longest pause before re-running a transaction (before jitter). */
export const MAX_BACKOFF_MS = 200;

/** What every PostgreSQL store takes (the native one and the ORM integrations alike). */
export interface PgTransactionOptions {
  /**
   * `lock_timeout` of each write transaction and of each read (the replay lookup, `get_operation`,
   * lists, dead letters): beyond it the call answers `busy`. Default 5000 ms.
   */
  lockTimeoutMs?: number;
  /** Re-runs of a transaction after a serialization failure or deadlock (40001, 40P01). Default 5. */
  maxRetries?: number;
  /**
   * The store's clock: it stamps the records, and the back-off before a re-run sleeps on it.
   * Default the system clock.
   */
  clock?: Clock;
}

/** The settled form of PgTransactionOptions: every default applied, in this one place. */
export interface PgTransactionProtocol {
  /** Whole milliseconds, at least 1 (0 would mean no bound at all to PostgreSQL). */
  readonly lockTimeoutMs: number;
  readonly maxRetries: number;
  readonly clock: Clock;
}

/** Applies the defaults: lockTimeoutMs rounded and at least 1 ms, 5 re-runs, the system clock. */
export function pgTransactionProtocol(options: PgTransactionOptions = {}): PgTransactionProtocol {
  return {
    lockTimeoutMs: Math.max(1, Math.round(options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS)),
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    clock: options.clock ?? systemClock,
  };
}

/**
 * The pause before re-run number `attempt + 1`: 2, 4, 8, ... ms up to MAX_BACKOFF_MS, times a
 * jitter in [0.5, 1) so that the transactions that collided do not collide again. `random` is
 * Math.random unless a test fixes it.
 */
export function pgBackoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.min(MAX_BACKOFF_MS, 2 * 2 ** attempt) * (0.5 + random() / 2);
}

/** The identity lock a transaction takes first: its advisory key (digits only) and whether to try it. */
export interface PgIdentityLock {
  /** `identityLockKey` as decimal digits: safe inline in SQL, and as a `::bigint` parameter. */
  readonly key: string;
  /** Try the lock and report whether another transaction held it (then wait for it all the same). */
  readonly tryLock: boolean;
}

/** The advisory lock `options.lock` asks for, or undefined when the transaction takes none. */
export function pgIdentityLock(options: SqlTransactionOptions): PgIdentityLock | undefined {
  const { lock } = options;
  if (lock === undefined) return undefined;
  return { key: identityLockKey(lock.identity).toString(), tryLock: lock.tryLock === true };
}

/** What one attempt tells the protocol while it runs. */
export interface PgAttempt {
  /**
   * Call once the body has returned: from then on only COMMIT can fail, so nothing is re-run and a
   * connection lost is `outcome_unknown`.
   */
  bodyReturned(): void;
}

/** How one engine's errors are read. */
export interface PgErrorSource {
  /**
   * The node-postgres-shaped error (a SQLSTATE `code`, or a socket error) behind `error`, or
   * undefined when it is not a database error (the application's own, which passes unchanged).
   */
  driverError(error: unknown): unknown;
  /** Names the server in `unavailable` errors, where the engine knows it. */
  readonly target?: PgTarget | undefined;
}

/**
 * Runs one write transaction by PostgreSQL's protocol, the same for every store: `attempt` runs
 * BEGIN (with the lock bound and the identity's lock), the body and COMMIT; after a serialization
 * failure or deadlock before the body returned it runs again, at most `maxRetries` times, after
 * pgBackoffMs on the protocol's clock (an abort ends the pause). A database error is translated
 * (translatePgError: `outcome_unknown` for a connection lost after the body returned); any other
 * error, the body's own or an IdemError, comes out unchanged.
 */
export async function runPgTransaction<T>(
  protocol: PgTransactionProtocol,
  errors: PgErrorSource,
  signal: AbortSignal | undefined,
  attempt: (progress: PgAttempt) => Promise<T>,
): Promise<T> {
  for (let n = 0; ; n += 1) {
    signal?.throwIfAborted();
    let returned = false;
    try {
      return await attempt({
        bodyReturned: () => {
          returned = true;
        },
      });
    } catch (error) {
      const cause = isIdemError(error) ? undefined : errors.driverError(error);
      if (!returned && cause !== undefined && isRetryableInAdapter(cause) && n < protocol.maxRetries) {
        await protocol.clock.sleep(pgBackoffMs(n), signal === undefined ? {} : { signal });
        continue;
      }
      throw translatePgFailure(error, cause, returned, errors.target);
    }
  }
}

/**
 * A failed read or transaction as its caller sees it: `cause` (the driver's error behind `error`)
 * translated, with a connection lost after the body returned as `outcome_unknown`; `error` itself
 * when it was not a database error.
 */
export function translatePgFailure(
  error: unknown,
  cause: unknown,
  bodyReturned: boolean,
  target?: PgTarget,
): unknown {
  if (cause === undefined) return error;
  const duringCommit = bodyReturned && isConnectionLoss(cause);
  const translated: IdemError = translatePgError(cause, {
    duringCommit,
    ...(target === undefined ? {} : { target }),
  });
  return translated;
}
