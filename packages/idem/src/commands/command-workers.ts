import type { Clock } from '../core/clock.js';
import type { LoggerOption } from '../log/to-logger.js';
import type { DurableHandler } from '../operations/durable-handler.js';
import { Worker } from '../operations/worker.js';
import type { IdemStore } from '../ports/idem-store.js';
import { RUN_COMMAND, type CommandHandler } from './command-handler.js';

/** What `startCommandWorkers` runs: the store's ledger, the handler, and how many loops. */
export interface CommandWorkersOptions<App> {
  readonly store: Pick<IdemStore<App>, 'ledger'>;
  readonly handler: CommandHandler;
  /** Worker loops, each running one operation at a time. Default 2. */
  readonly concurrency?: number;
  /** Other durable operations these loops should carry too, by name. */
  readonly handlers?: Readonly<Record<string, DurableHandler>>;
  readonly clock?: Clock;
  readonly logger?: LoggerOption;
  /** Default 5 s; renewed every third of it while a command runs. */
  readonly leaseMs?: number;
  /** Default 200 ms; also the pace at which a running command looks for a cancel request. */
  readonly pollIntervalMs?: number;
  /** How long a final record replays. Default 24 h. */
  readonly retentionMs?: number;
}

/**
 * Starts the workers that run `run_command` operations (and `handlers`, if given: a worker claims
 * any due durable operation, so every loop on a store should know every operation name). A
 * command interrupted by a crash is picked up by whichever loop claims it once its lease expires.
 * Returns a function that stops them, waiting for the commands in hand to end.
 */
export function startCommandWorkers<App>(options: CommandWorkersOptions<App>): () => Promise<void> {
  const handlers = { ...options.handlers, [RUN_COMMAND]: options.handler };
  const workers = Array.from(
    { length: options.concurrency ?? 2 },
    () =>
      new Worker({
        store: options.store,
        handlers,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...(options.logger === undefined ? {} : { logger: options.logger }),
        ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
        ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
        ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
      }),
  );
  for (const worker of workers) worker.start();
  return async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  };
}
