import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { openSqlite } from '../adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../adapters/sqlite/sqlite-store.js';
import { systemClock, type Clock } from '../core/clock.js';
import { FaultPoints } from '../core/fault-points.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { DEFAULT_RETENTION_MS, Executor } from '../executor/executor.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../core/retry-policy.js';
import { NotesApp } from './notes-app.js';
import { referenceMcpServer } from './reference-tools.js';
import type { TokenRegistry } from './token-registry.js';
import type { ServerApp } from './server-app.js';

export const DEFAULT_TOMBSTONE_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export interface ReferenceAppOptions {
  dbPath: string;
  registry: TokenRegistry;
  clock?: Clock;
  logger?: Logger;
  faults?: FaultPoints;
  retentionMs?: number;
  tombstoneTtlMs?: number;
  lockTimeoutMs?: number;
  synchronous?: 'FULL' | 'NORMAL';
  /** Base URL of the deployment provider (also the webhook receiver of create_note's notify). */
  providerUrl?: string;
  /** The worker's policy for start_deployment. Default DEFAULT_RETRY_POLICY. */
  deploymentPolicy?: RetryPolicy;
  /** How long a retry waits for an in-flight operation. Default 2 s. */
  inFlightWaitMs?: number;
}

export { SERVER_INFO } from './reference-tools.js';

/** The reference server's state: one database, one store, one executor, the notes application. */
export class ReferenceApp implements ServerApp {
  readonly db: SqliteDatabase;
  readonly store: SqliteStore;
  readonly executor: Executor<SqliteDatabase>;
  readonly notes: NotesApp;
  readonly registry: TokenRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retentionMs: number;
  readonly tombstoneTtlMs: number;
  readonly providerUrl: string | undefined;
  readonly deploymentPolicy: RetryPolicy;

  constructor(options: ReferenceAppOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.registry = options.registry;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.tombstoneTtlMs = options.tombstoneTtlMs ?? DEFAULT_TOMBSTONE_TTL_MS;
    this.providerUrl = options.providerUrl;
    this.deploymentPolicy = options.deploymentPolicy ?? DEFAULT_RETRY_POLICY;
    this.db = openSqlite(options.dbPath, { synchronous: options.synchronous ?? 'FULL' });
    // The application's schema first, while the driver's own busy wait still covers concurrent starts.
    this.notes = new NotesApp(this.db, this.clock);
    this.store = new SqliteStore(this.db, {
      clock: this.clock,
      faults: options.faults ?? new FaultPoints(),
      ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
    });
    this.executor = new Executor({
      store: this.store,
      clock: this.clock,
      logger: this.logger,
      authorize: (principal, workspace) => this.registry.holds(principal, workspace),
      ...(options.inFlightWaitMs === undefined ? {} : { inFlightWaitMs: options.inFlightWaitMs }),
    });
  }

  /** A new McpServer with the reference tools (one per HTTP request, or one for stdio). */
  createMcpServer(): McpServer {
    return referenceMcpServer(this, this.executor, this.notes);
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
