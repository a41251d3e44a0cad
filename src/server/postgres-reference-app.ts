import type { McpServer } from '@modelcontextprotocol/server';
import { openPostgres, type OpenPostgresOptions } from '../adapters/postgres/open-postgres.js';
import type { PgClient, PgPool } from '../adapters/postgres/postgres-pool.js';
import { pgTarget, translatePgError } from '../adapters/postgres/postgres-errors.js';
import { PostgresStore } from '../adapters/postgres/postgres-store.js';
import type { Clock } from '../core/clock.js';
import type { FaultPoints } from '../core/fault-points.js';
import type { Logger } from '../core/logger.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type { Executor } from '../executor/executor.js';
import type { CommandHandler } from '../commands/command-handler.js';
import { PostgresNotes } from './postgres-notes.js';
import {
  referenceExecutor,
  referenceSettings,
  type ReferenceSettings,
  type ReferenceSettingsOptions,
} from './reference-settings.js';
import { referenceServerFactory } from './reference-tools.js';
import type { ServerApp } from './server-app.js';
import type { TokenRegistry } from './token-registry.js';

export interface PostgresReferenceAppOptions extends ReferenceSettingsOptions {
  url: string;
  pool?: Omit<OpenPostgresOptions, 'logger'>;
  /** Run migrations on start (default true); `idem migrate` does it on its own. */
  migrate?: boolean;
  /** See PostgresStoreOptions.preparedStatements (default true). */
  preparedStatements?: boolean;
}

/** The reference server on PostgreSQL: several instances may share one database. */
export class PostgresReferenceApp implements ServerApp {
  readonly store: PostgresStore;
  readonly executor: Executor<PgClient>;
  readonly registry: TokenRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly faults: FaultPoints;
  readonly retentionMs: number;
  readonly tombstoneTtlMs: number;
  readonly providerUrl: string | undefined;
  readonly deploymentPolicy: RetryPolicy;
  readonly commandHandler: CommandHandler | undefined;
  readonly #pool: PgPool;
  readonly #notes: PostgresNotes;
  readonly #newMcpServer: () => McpServer;

  private constructor(
    settings: ReferenceSettings,
    inFlightWaitMs: number | undefined,
    pool: PgPool,
    store: PostgresStore,
    notes: PostgresNotes,
  ) {
    ({
      registry: this.registry,
      clock: this.clock,
      logger: this.logger,
      faults: this.faults,
      retentionMs: this.retentionMs,
      tombstoneTtlMs: this.tombstoneTtlMs,
      providerUrl: this.providerUrl,
      deploymentPolicy: this.deploymentPolicy,
      commandHandler: this.commandHandler,
    } = settings);
    this.#pool = pool;
    this.store = store;
    this.#notes = notes;
    this.executor = referenceExecutor(store, settings, inFlightWaitMs);
    this.#newMcpServer = referenceServerFactory(this, this.executor, this.#notes);
  }

  static async open(options: PostgresReferenceAppOptions): Promise<PostgresReferenceApp> {
    const settings = referenceSettings(options);
    const { clock } = settings;
    const pool = await openPostgres(options.url, {
      ...options.pool,
      ...(options.logger ? { logger: options.logger } : {}),
    });
    try {
      const store = await PostgresStore.create(pool, {
        clock,
        migrate: options.migrate ?? true,
        preparedStatements: options.preparedStatements ?? true,
        ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
      });
      const notes = await PostgresNotes.create(pool, clock);
      return new PostgresReferenceApp(settings, options.inFlightWaitMs, pool, store, notes);
    } catch (error) {
      await pool.end().catch(() => undefined);
      // The notes table's DDL reports a driver error of its own: name the server like the store does.
      throw translatePgError(error, { target: pgTarget(pool) });
    }
  }

  createMcpServer(): McpServer {
    return this.#newMcpServer();
  }

  async close(): Promise<void> {
    await this.store.close();
    await this.#pool.end();
  }
}
