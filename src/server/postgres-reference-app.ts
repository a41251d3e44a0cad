import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { openPostgres, type OpenPostgresOptions } from '../adapters/postgres/open-postgres.js';
import type { PgClient, PgPool } from '../adapters/postgres/postgres-pool.js';
import { PostgresStore } from '../adapters/postgres/postgres-store.js';
import { systemClock, type Clock } from '../core/clock.js';
import { FaultPoints } from '../core/fault-points.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../core/retry-policy.js';
import { DEFAULT_RETENTION_MS, Executor } from '../executor/executor.js';
import { PostgresNotes } from './postgres-notes.js';
import { DEFAULT_TOMBSTONE_TTL_MS } from './reference-app.js';
import { referenceMcpServer } from './reference-tools.js';
import type { ServerApp } from './server-app.js';
import type { TokenRegistry } from './token-registry.js';

export interface PostgresReferenceAppOptions {
  url: string;
  registry: TokenRegistry;
  pool?: Omit<OpenPostgresOptions, 'logger'>;
  /** Run migrations on start (default true); `idem migrate` does it on its own. */
  migrate?: boolean;
  clock?: Clock;
  logger?: Logger;
  faults?: FaultPoints;
  retentionMs?: number;
  tombstoneTtlMs?: number;
  lockTimeoutMs?: number;
  providerUrl?: string;
  deploymentPolicy?: RetryPolicy;
  inFlightWaitMs?: number;
}

/** The reference server on PostgreSQL: several instances may share one database. */
export class PostgresReferenceApp implements ServerApp {
  readonly store: PostgresStore;
  readonly executor: Executor<PgClient>;
  readonly registry: TokenRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retentionMs: number;
  readonly tombstoneTtlMs: number;
  readonly providerUrl: string | undefined;
  readonly deploymentPolicy: RetryPolicy;
  readonly #pool: PgPool;
  readonly #notes: PostgresNotes;

  private constructor(
    options: PostgresReferenceAppOptions,
    pool: PgPool,
    store: PostgresStore,
    notes: PostgresNotes,
    clock: Clock,
  ) {
    this.#pool = pool;
    this.store = store;
    this.#notes = notes;
    this.clock = clock;
    this.logger = options.logger ?? silentLogger;
    this.registry = options.registry;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.tombstoneTtlMs = options.tombstoneTtlMs ?? DEFAULT_TOMBSTONE_TTL_MS;
    this.providerUrl = options.providerUrl;
    this.deploymentPolicy = options.deploymentPolicy ?? DEFAULT_RETRY_POLICY;
    this.executor = new Executor({
      store,
      clock,
      logger: this.logger,
      authorize: (principal, workspace) => this.registry.holds(principal, workspace),
      ...(options.inFlightWaitMs === undefined ? {} : { inFlightWaitMs: options.inFlightWaitMs }),
    });
  }

  static async open(options: PostgresReferenceAppOptions): Promise<PostgresReferenceApp> {
    const clock = options.clock ?? systemClock;
    const pool = await openPostgres(options.url, {
      ...options.pool,
      ...(options.logger ? { logger: options.logger } : {}),
    });
    try {
      const store = await PostgresStore.create(pool, {
        clock,
        faults: options.faults ?? new FaultPoints(),
        migrate: options.migrate ?? true,
        ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
      });
      const notes = await PostgresNotes.create(pool, clock);
      return new PostgresReferenceApp(options, pool, store, notes, clock);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  createMcpServer(): McpServer {
    return referenceMcpServer(this, this.executor, this.#notes);
  }

  async close(): Promise<void> {
    await this.store.close();
    await this.#pool.end();
  }
}
