import type { McpServer } from '@modelcontextprotocol/server';
import type { Clock, Logger, RetryPolicy, IdemStore } from 'idem';
import type { CommandHandler } from 'idem/commands';
import type { FaultPoints } from 'idem/testing';
import type { TokenRegistry } from './token-registry.js';

/**
 * What the HTTP and stdio transports need of an application: its token registry, its logger, a new
 * McpServer per HTTP request (or one for stdio), and close. The reference server and `idem proxy`.
 */
export type McpApp = Pick<ServerApp, 'registry' | 'logger' | 'createMcpServer' | 'close'>;

/** What the transports and the CLI need of a reference server, whatever its engine. */
export interface ServerApp {
  readonly store: IdemStore;
  /** The fault points of its executor (`IDEM_TEST_FAULTS`), shared with its background work. */
  readonly faults: FaultPoints;
  readonly registry: TokenRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retentionMs: number;
  readonly tombstoneTtlMs: number;
  readonly providerUrl: string | undefined;
  readonly deploymentPolicy: RetryPolicy;
  /** With `--commands`: run_command and read_command_output are listed. */
  readonly commandHandler?: CommandHandler | undefined;
  /** A new McpServer with the reference tools (one per HTTP request, or one for stdio). */
  createMcpServer(): McpServer;
  close(): Promise<void>;
}
