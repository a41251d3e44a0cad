import type pg from 'pg';
import type { Logger } from '../../core/logger.js';
import { loadPg } from './load-pg.js';
import { pgTarget, translatePgError } from './postgres-errors.js';
import type { PgPool } from './postgres-pool.js';

export interface OpenPostgresOptions {
  /** Pool size per process. Default 10. */
  max?: number;
  /** Server-side `statement_timeout` of every statement, ms. Default 30000. */
  statementTimeoutMs?: number;
  /**
   * `lock_timeout` of every connection's session, ms. A PostgresStore whose `lockTimeoutMs` is at
   * least this then runs its reads as they are, without a read-only transaction of their own to
   * bound their lock waits (one round trip fewer per replay), and one whose `lockTimeoutMs` is
   * exactly this begins its write transactions without setting it again. Unset: the server's
   * default.
   */
  lockTimeoutMs?: number;
  /** How long to wait for a connection from the pool or the server, ms. Default 5000. */
  connectionTimeoutMs?: number;
  /** Idle connections are closed after this, ms. Default 30000. */
  idleTimeoutMs?: number;
  /** Schema to use (search_path); created if missing. Default: the server's default (public). */
  schema?: string;
  logger?: Logger;
}

/**
 * A node-postgres pool for a PostgresStore. With `schema` it connects once to create it, and a
 * server that cannot be used is an `unavailable` IdemError naming it. A pooled connection that dies
 * while idle (server restart, `pg_terminate_backend`) is logged and dropped instead of crashing the
 * process; the pool opens a new one on the next request.
 */
export async function openPostgres(url: string, options: OpenPostgresOptions = {}): Promise<PgPool> {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new Error(`invalid schema name ${JSON.stringify(options.schema)}`);
  }
  const { Pool } = await loadPg();
  const pool = new Pool({
    connectionString: url,
    max: options.max ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    ...(options.lockTimeoutMs === undefined
      ? {}
      : { lock_timeout: Math.max(1, Math.round(options.lockTimeoutMs)) }),
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
    ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema}` }),
  });
  pool.on('error', (error: Error & { code?: string }) => {
    options.logger?.warn('postgres.idle_client_error', { code: error.code ?? 'connection_lost' });
  });
  // A connection killed between two statements of a checked-out client emits 'error' on the client,
  // where the pool does not listen: without this the process would crash. The next statement then
  // fails as "not queryable", which the store reports as a retryable loss.
  pool.on('connect', (client: pg.PoolClient) => {
    client.on('error', (error: Error & { code?: string }) => {
      options.logger?.warn('postgres.client_error', { code: error.code ?? 'connection_lost' });
    });
  });
  if (options.schema !== undefined) {
    try {
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`);
    } catch (error) {
      await pool.end().catch(() => undefined);
      // A server that refuses or has no such database: `unavailable`, naming host:port.
      throw translatePgError(error, { target: pgTarget(pool as unknown as PgPool) });
    }
  }
  return pool as unknown as PgPool;
}
