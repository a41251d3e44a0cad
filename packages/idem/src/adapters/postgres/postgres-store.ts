import type { Clock } from '../../core/clock.js';
import { IdemError } from '../../core/errors.js';
import type { StoreCapabilities } from '../../ports/idem-store.js';
import type { MaybePromise, SignalOption } from '../../ports/maybe-async.js';
import type { SqlConnection, SqlDriver, SqlTransactionOptions } from '../sql/sql-driver.js';
import { SqlStore } from '../sql/sql-store.js';
import { PostgresConnection } from './postgres-connection.js';
import { postgresDialect } from './postgres-dialect.js';
import {
  pgIdentityLock,
  pgTransactionProtocol,
  runPgTransaction,
  type PgTransactionOptions,
} from './pg-transaction.js';
import {
  isConnectionLoss,
  pgTarget,
  translateConnectError,
  translatePgError,
  type PgTarget,
} from './postgres-errors.js';
import type { PgClient, PgPool, PgQueryResult } from './postgres-pool.js';
import { migratePostgres } from './postgres-schema.js';
import { abandonOnAbort } from '../../core/abandon-on-abort.js';

export interface PostgresStoreOptions extends PgTransactionOptions {
  /** Apply migrations when the store is created. Default true. */
  migrate?: boolean;
  /**
   * Send the statements of every call (the lookup, and the receipt's INSERT or upsert) as named
   * prepared statements, parsed and planned once per connection: in the bench this halves what the
   * lookup costs the server. Turn it off behind a pooler in transaction mode that does not keep prepared
   * statements (PgBouncer before 1.21, or without `max_prepared_statements`). Default true.
   */
  preparedStatements?: boolean;
}

/** The store's default `lockTimeoutMs`. */
export { DEFAULT_LOCK_TIMEOUT_MS } from './pg-transaction.js';

/** What the PostgreSQL store declares: asynchronous, optimistic inserts, multi-process, durable. */
export const POSTGRES_CAPABILITIES: StoreCapabilities = {
  engine: 'postgres',
  synchronous: false,
  optimisticInsert: true,
  multiProcess: true,
  durable: true,
};

/**
 * The PostgreSQL store, for several server instances on one database: the shared SQL store
 * (src/adapters/sql) on a node-postgres pool that stays the caller's. An effect receives the
 * transaction's own `PoolClient`. Concurrent calls with one identity are serialized by the
 * database (a transaction-scoped advisory lock on the identity, and the primary key as a
 * backstop), never by process memory. Replays are plain SELECTs that take no row lock and write
 * nothing, in a read-only transaction whose wait for a table lock is bounded by `lockTimeoutMs`
 * (none where the pool's sessions bound it already); the lookups that start in one turn of the
 * event loop are read in one statement, each answering what a lookup of its own would.
 * Workers share operations through `FOR UPDATE SKIP LOCKED` and leases.
 */
export class PostgresStore extends SqlStore<PgClient> {
  private constructor(pool: PgPool, options: PostgresStoreOptions) {
    const protocol = pgTransactionProtocol(options);
    super(postgresDriver(pool, options, protocol.clock), { clock: protocol.clock });
  }

  /** Creates the store, migrating the schema first unless `migrate: false`. */
  static async create(pool: PgPool, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    if (options.migrate ?? true) {
      try {
        await migratePostgres(pool);
      } catch (error) {
        throw translatePgError(error, { target: pgTarget(pool) });
      }
    }
    return new PostgresStore(pool, options);
  }
}

/**
 * SQL and driver errors only: pooled clients, one round trip to begin (BEGIN, the lock bound
 * unless every session has it, and the identity's advisory lock), and PostgreSQL's transaction
 * protocol (runPgTransaction: bounded re-runs after a serialization failure or deadlock on `clock`,
 * the translation of what the driver throws). `clock`, when given, takes the place of
 * `options.clock`.
 */
export function postgresDriver(
  pool: PgPool,
  options: PostgresStoreOptions,
  clock?: Clock,
): SqlDriver<PgClient> {
  const target: PgTarget = pgTarget(pool);
  const named = options.preparedStatements ?? true;
  const protocol = pgTransactionProtocol(clock === undefined ? options : { ...options, clock });
  const { lockTimeoutMs } = protocol;
  const errors = { driverError: (error: unknown) => (isDriverError(error) ? error : undefined), target };
  const readBegin = `BEGIN READ ONLY; SET LOCAL lock_timeout = ${lockTimeoutMs}`;
  /**
   * The `lock_timeout` of the pool's sessions, ms (0: none; openPostgres's `lockTimeoutMs` sets it):
   * read once, on the first read's connection, since a pool opens every connection with the same
   * settings. Idem itself only ever sets lock_timeout LOCAL to a transaction, so the answer holds
   * for the store's life. Sessions bound by lockTimeoutMs or less need no bound of a read's own;
   * sessions bound by exactly lockTimeoutMs none of a transaction's own.
   */
  let sessionMs: number | undefined;
  const readSessionMs = async (client: PgClient): Promise<number> => {
    const { rows } = await client.query<{ ms: string }>(
      "SELECT setting AS ms FROM pg_settings WHERE name = 'lock_timeout'",
    );
    sessionMs = Number(rows[0]?.ms);
    return sessionMs;
  };
  /**
   * What a transaction sends first, in one round trip: BEGIN, the lock bound unless every session
   * has exactly this one already (SET LOCAL costs the server a setting and its undoing at the end
   * of each transaction: about a tenth of a first execution's rate at 8 in flight), and the
   * identity's advisory lock. A key prints as digits only, so it is safe inline in the simple-query
   * protocol.
   */
  const beginning = (lock: ReturnType<typeof pgIdentityLock>): string => {
    const bound = sessionMs === lockTimeoutMs ? '' : `; SET LOCAL lock_timeout = ${lockTimeoutMs}`;
    const take =
      lock === undefined
        ? ''
        : lock.tryLock
          ? `; SELECT pg_try_advisory_xact_lock(${lock.key}) AS free`
          : `; SELECT pg_advisory_xact_lock(${lock.key})`;
    return `BEGIN${bound}${take}`;
  };
  /** A pooled client; an abort while waiting for one ends the wait (a late client goes back). */
  const connect = async (signal: AbortSignal | undefined): Promise<PgClient> => {
    try {
      return await abandonOnAbort(pool.connect(), signal, { onLate: (client) => client.release() });
    } catch (error) {
      if (signal?.aborted === true && error === signal.reason) throw error;
      throw translateConnectError(error, target);
    }
  };
  return {
    dialect: postgresDialect,
    capabilities: POSTGRES_CAPABILITIES,
    async read<T>(body: (conn: SqlConnection) => MaybePromise<T>, signal: SignalOption = {}): Promise<T> {
      signal.signal?.throwIfAborted();
      const client = await connect(signal.signal);
      let committing = false;
      try {
        // A read takes ACCESS SHARE locks too (a LOCK TABLE or an ALTER TABLE makes it wait): bound
        // the wait by the same lock_timeout as writes: the session's, or in a read-only transaction
        // of its own.
        // Known after the first read: no await (and no turn of the microtask queue) for it.
        const ms = sessionMs ?? (await readSessionMs(client));
        if (ms > 0 && ms <= lockTimeoutMs) {
          const value = await body(new PostgresConnection(client, named));
          client.release();
          return value;
        }
        await client.query(readBegin);
        const value = await body(new PostgresConnection(client, named));
        committing = true;
        // COMMIT of a read-only transaction writes nothing and cannot change what was read: the
        // caller has its value at once, and the client goes back to the pool once COMMIT is done
        // (a client whose COMMIT failed is dropped, never reused mid-transaction).
        client.query('COMMIT').then(
          () => client.release(),
          (error: unknown) => client.release(error instanceof Error ? error : true),
        );
        return value;
      } catch (error) {
        await giveBack(client, error, committing);
        // Nothing was written: a read's outcome is never unknown.
        throw translatePgError(error, { target });
      }
    },
    async transaction<T>(
      body: (conn: SqlConnection, client: PgClient, contended: boolean) => MaybePromise<T>,
      txOptions: SqlTransactionOptions = {},
    ): Promise<T> {
      const lock = pgIdentityLock(txOptions);
      const begin = beginning(lock);
      return runPgTransaction(protocol, errors, txOptions.signal, async (attempt) => {
        const client = await connect(txOptions.signal);
        let committing = false;
        try {
          const begun = await client.query<{ free?: boolean }>(begin);
          let contended = false;
          if (lock?.tryLock === true && lastResult(begun).rows[0]?.free !== true) {
            contended = true;
            await client.query(`SELECT pg_advisory_xact_lock(${lock.key})`);
          }
          const value = await body(new PostgresConnection(client, named), client, contended);
          committing = true;
          attempt.bodyReturned();
          await client.query('COMMIT');
          client.release();
          return value;
        } catch (error) {
          await giveBack(client, error, committing);
          throw error;
        }
      });
    },
    // The pool is the caller's: closing the store does not end it.
    close: async () => undefined,
  };
}

/**
 * Gives back the client of a read or transaction that failed: rolled back first unless COMMIT was
 * sent or the connection is lost, and dropped from the pool (never reused) when it is lost.
 */
async function giveBack(client: PgClient, error: unknown, committing: boolean): Promise<void> {
  const lost = isConnectionLoss(error);
  if (!committing && !lost) await client.query('ROLLBACK').catch(() => undefined);
  client.release(lost ? (error as Error) : undefined);
}

/** node-postgres answers a multi-statement simple query with one result per statement. */
function lastResult<Row>(result: PgQueryResult<Row> | PgQueryResult<Row>[]): PgQueryResult<Row> {
  return Array.isArray(result) ? (result[result.length - 1] as PgQueryResult<Row>) : result;
}

/** An error from node-postgres or the socket (it has a SQLSTATE or a system error code). */
function isDriverError(error: unknown): boolean {
  if (error instanceof IdemError) return false;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' || isConnectionLoss(error);
}
