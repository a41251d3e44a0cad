import type { McpServer } from '@modelcontextprotocol/server';
import { openSqlite } from '../adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../adapters/sqlite/sqlite-database.js';
import { translateSqliteError } from '../adapters/sqlite/sqlite-errors.js';
import { SqliteStore } from '../adapters/sqlite/sqlite-store.js';
import type { Clock } from '../core/clock.js';
import type { FaultPoints } from '../core/fault-points.js';
import type { Logger } from '../core/logger.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type { Executor } from '../executor/executor.js';
import type { CommandHandler } from '../commands/command-handler.js';
import { NotesApp } from './notes-app.js';
import { referenceServerFactory } from './reference-tools.js';
import { referenceExecutor, referenceSettings, type ReferenceSettingsOptions } from './reference-settings.js';
import type { ServerApp } from './server-app.js';
import type { TokenRegistry } from './token-registry.js';

export { DEFAULT_TOMBSTONE_TTL_MS } from './reference-settings.js';
export { SERVER_INFO } from './reference-tools.js';

export interface ReferenceAppOptions extends ReferenceSettingsOptions {
  dbPath: string;
  synchronous?: 'FULL' | 'NORMAL';
}

/** The reference server on SQLite: one database, one store, one executor, the notes application. */
export class ReferenceApp implements ServerApp {
  readonly db: SqliteDatabase;
  readonly store: SqliteStore;
  readonly executor: Executor<SqliteDatabase>;
  readonly notes: NotesApp;
  readonly registry: TokenRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly faults: FaultPoints;
  readonly retentionMs: number;
  readonly tombstoneTtlMs: number;
  readonly providerUrl: string | undefined;
  readonly deploymentPolicy: RetryPolicy;
  readonly commandHandler: CommandHandler | undefined;
  readonly #newMcpServer: () => McpServer;

  constructor(options: ReferenceAppOptions) {
    const settings = referenceSettings(options);
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
    this.db = openSqlite(options.dbPath, { synchronous: options.synchronous ?? 'FULL' });
    try {
      // The application's schema first, while the driver's own busy wait still covers concurrent starts.
      this.notes = new NotesApp(this.db, this.clock);
      this.store = new SqliteStore(this.db, {
        clock: this.clock,
        ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
      });
    } catch (error) {
      this.db.close();
      // A full disk or a read-only file at start-up: an error that names the file.
      throw translateSqliteError(error, 0, options.dbPath);
    }
    this.executor = referenceExecutor(this.store, settings, options.inFlightWaitMs);
    this.#newMcpServer = referenceServerFactory(this, this.executor, this.notes);
  }

  createMcpServer(): McpServer {
    return this.#newMcpServer();
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
