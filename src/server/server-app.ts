import type { McpServer } from '@modelcontextprotocol/server';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type { CommandHandler } from '../commands/command-handler.js';
import type { FaultPoints } from '../core/fault-points.js';
import type { IdemStore } from '../ports/idem-store.js';
import type { TokenRegistry } from './token-registry.js';

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
