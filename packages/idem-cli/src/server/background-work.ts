import type { Clock, Logger, RetryPolicy, IdemStore } from 'idem';
import { startOutboxDispatcher, startWorker, type DurableHandler, type RecoveryMode } from 'idem/operations';
import { type CommandHandler, RUN_COMMAND } from 'idem/commands';
import type { FaultPoints } from 'idem/testing';
import { deploymentHandler } from './deployment-handler.js';

export interface BackgroundWorkOptions {
  store: IdemStore;
  faults?: FaultPoints;
  providerUrl: string;
  /** How the provider deduplicates; decides the recovery path. */
  providerMode: RecoveryMode;
  /** Mode key: how long the provider keeps an idempotency key, ms (no resend after). Default: unbounded. */
  providerKeyRetentionMs?: number;
  policy: RetryPolicy;
  retentionMs: number;
  clock: Clock;
  logger: Logger;
  leaseMs?: number;
  pollIntervalMs?: number;
  /** Sends of an outbox message before it becomes a dead letter (the dispatcher's default if unset). */
  outboxMaxAttempts?: number;
  /** With `--commands`: run_command operations are run too, by `commandWorkers` more loops. */
  commandHandler?: CommandHandler | undefined;
  /** Worker loops added for commands (each runs one operation at a time). Default 2. */
  commandWorkers?: number;
}

/**
 * The reference server's background work: the worker that carries start_deployment operations to a
 * final state, and the outbox dispatcher that delivers create_note's webhooks. Both loops start at
 * once; on start-up the worker picks up operations left `running` by a crashed process as soon as
 * their lease expires. Returns a function that stops both (letting the operation in hand finish).
 */
export function startBackgroundWork(options: BackgroundWorkOptions): () => Promise<void> {
  const common = {
    store: options.store,
    ...(options.faults === undefined ? {} : { faults: options.faults }),
    clock: options.clock,
    logger: options.logger,
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
  };
  const handlers: Record<string, DurableHandler> = {
    start_deployment: deploymentHandler({
      baseUrl: options.providerUrl,
      mode: options.providerMode,
      clock: options.clock,
      ...(options.providerKeyRetentionMs === undefined
        ? {}
        : { providerKeyRetentionMs: options.providerKeyRetentionMs }),
    }),
  };
  if (options.commandHandler !== undefined) handlers[RUN_COMMAND] = options.commandHandler;
  // A command may run for minutes and a worker carries one operation at a time: with commands,
  // more loops (every one knows every handler, as any worker may claim any due operation).
  const loops = options.commandHandler === undefined ? 1 : 1 + (options.commandWorkers ?? 2);
  // The public entries, as a user's own server starts them (idem/operations).
  const workers = startWorker({
    ...common,
    handlers,
    policy: options.policy,
    retentionMs: options.retentionMs,
    concurrency: loops,
  });
  const outbox = startOutboxDispatcher({
    ...common,
    ...(options.outboxMaxAttempts === undefined ? {} : { maxAttempts: options.outboxMaxAttempts }),
  });
  return async () => {
    await Promise.all([workers.stop(), outbox.stop()]);
  };
}
