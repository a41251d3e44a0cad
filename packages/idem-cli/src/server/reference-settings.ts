import {
  systemClock,
  type Clock,
  silentLogger,
  type Logger,
  DEFAULT_RETRY_POLICY,
  type RetryPolicy,
  DEFAULT_RETENTION_MS,
  Executor,
  type IdemStore,
} from 'idem';
import { DEFAULT_TOMBSTONE_TTL_MS } from 'idem/store';
import { authorizeByGrant } from 'idem/mcp';
import type { CommandHandler } from 'idem/commands';
import { FaultPoints } from 'idem/testing';
import type { ServerApp } from './server-app.js';
import type { TokenRegistry } from './token-registry.js';

export { DEFAULT_TOMBSTONE_TTL_MS };

/** What the reference server is configured with, whatever its engine. */
export interface ReferenceSettingsOptions {
  registry: TokenRegistry;
  clock?: Clock;
  logger?: Logger;
  faults?: FaultPoints;
  retentionMs?: number;
  tombstoneTtlMs?: number;
  lockTimeoutMs?: number;
  /** Base URL of the deployment provider (also the webhook receiver of create_note's notify). */
  providerUrl?: string;
  /** The worker's policy for start_deployment. Default DEFAULT_RETRY_POLICY. */
  deploymentPolicy?: RetryPolicy;
  /** How long a retry waits for an in-flight operation. Default 2 s. */
  inFlightWaitMs?: number;
  /** With `--commands`: the handler whose commands run_command offers. Absent: no command tools. */
  commandHandler?: CommandHandler;
}

/** The options with their defaults filled in: all of a ServerApp but its store and its methods. */
export type ReferenceSettings = Omit<ServerApp, 'store' | 'createMcpServer' | 'close'>;

/** Fills in the defaults of the options: one place for both engines. */
export function referenceSettings(options: ReferenceSettingsOptions): ReferenceSettings {
  return {
    registry: options.registry,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? silentLogger,
    faults: options.faults ?? new FaultPoints(),
    retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS,
    tombstoneTtlMs: options.tombstoneTtlMs ?? DEFAULT_TOMBSTONE_TTL_MS,
    providerUrl: options.providerUrl,
    deploymentPolicy: options.deploymentPolicy ?? DEFAULT_RETRY_POLICY,
    commandHandler: options.commandHandler,
  };
}

/**
 * The executor of a reference server: a call may act in the workspaces of the token it came with
 * (carried in its credentials by the transport), whatever other tokens its principal has.
 */
export function referenceExecutor<App>(
  store: IdemStore<App>,
  settings: ReferenceSettings,
  inFlightWaitMs: number | undefined,
): Executor<App> {
  return new Executor({
    store,
    clock: settings.clock,
    logger: settings.logger,
    faults: settings.faults,
    authorize: authorizeByGrant,
    ...(inFlightWaitMs === undefined ? {} : { inFlightWaitMs }),
  });
}
