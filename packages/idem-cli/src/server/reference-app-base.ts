import type { McpServer } from '@modelcontextprotocol/server';
import type { Clock, Logger, RetryPolicy, Executor, IdemStore } from 'idem';
import type { CommandHandler } from 'idem/commands';
import type { FaultPoints } from 'idem/testing';
import type { NotesRepository } from './notes-repository.js';
import { referenceExecutor, type ReferenceSettings } from './reference-settings.js';
import { referenceServerFactory } from './reference-tools.js';
import type { ServerApp } from './server-app.js';
import type { TokenRegistry } from './token-registry.js';

/**
 * What the reference server is made of on either engine, assembled in one place: its settings,
 * the executor on the engine's store, and the MCP servers with the reference tools on its notes.
 * The engine's class opens the database, the store and the notes, and closes them.
 */
export abstract class ReferenceAppBase<App> implements ServerApp {
  abstract readonly store: IdemStore<App>;
  readonly executor: Executor<App>;
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

  protected constructor(
    settings: ReferenceSettings,
    store: IdemStore<App>,
    notes: NotesRepository<App>,
    inFlightWaitMs: number | undefined,
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
    this.executor = referenceExecutor(store, settings, inFlightWaitMs);
    this.#newMcpServer = referenceServerFactory(this, this.executor, notes);
  }

  createMcpServer(): McpServer {
    return this.#newMcpServer();
  }

  abstract close(): Promise<void>;
}
