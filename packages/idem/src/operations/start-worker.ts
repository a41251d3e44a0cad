import { OutboxDispatcher, type OutboxDispatcherOptions } from './outbox-dispatcher.js';
import { Worker, type WorkerOptions } from './worker.js';

/** Background loops started by `startWorker` or `startOutboxDispatcher`. */
export interface RunningLoops {
  /**
   * Stops polling and resolves once the work in hand (an operation's current step, a batch of
   * sends) is done with. Never rejects; calling it again returns the same promise.
   */
  stop(): Promise<void>;
  /** Resolves once the loops have stopped, by `stop()` or by the `signal` given at start. */
  readonly stopped: Promise<void>;
}

/** `startWorker`'s options: the `Worker`'s, plus how many loops and what stops them. */
export interface StartWorkerOptions extends Omit<WorkerOptions, 'random' | 'workerId'> {
  /**
   * Loops, each carrying one operation at a time. Default 1. Every loop on a store (in this
   * process or another) should know every durable operation name it may claim.
   */
  readonly concurrency?: number;
  /** Aborting it stops the loops (as `stop()` does). Already aborted: nothing starts. */
  readonly signal?: AbortSignal;
}

/** `startOutboxDispatcher`'s options: the dispatcher's, plus what stops it. */
export interface StartOutboxDispatcherOptions extends Omit<OutboxDispatcherOptions, 'random'> {
  /** Aborting it stops the dispatcher (as `stop()` does). Already aborted: nothing starts. */
  readonly signal?: AbortSignal;
}

/**
 * Starts the workers that carry durable operations (those a durable tool accepted) from `accepted`
 * to a final state with `handlers` (by operation name, i.e. the tool's name). Promises: an
 * operation is worked on only under its lease, each provider call gets the provider key
 * `idem-<operation id>` on every attempt, retries follow `policy` (or the handler's own), and a
 * crashed worker's operation is taken over by any worker once its lease expires. Errors from the
 * store are logged (`worker.error`) and the loops go on. Stop with `signal` or `stop()`.
 */
export function startWorker(options: StartWorkerOptions): RunningLoops {
  const { concurrency = 1, signal, ...workerOptions } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError('concurrency must be a positive integer');
  }
  const workers = Array.from({ length: concurrency }, () => new Worker(workerOptions));
  return runLoops(workers, signal);
}

/**
 * Starts the loop that sends the messages effects enqueued (`EffectContext.enqueue`) once their
 * transaction committed: `POST <destination>` with the JSON payload and `Idempotency-Key:
 * <dedupKey>`, at least once (effectively once at a receiver that deduplicates on the key), with
 * backoff until `maxAttempts`, then kept as a dead letter (`idem ops requeue`). Stop with `signal`
 * or `stop()`.
 */
export function startOutboxDispatcher(options: StartOutboxDispatcherOptions): RunningLoops {
  const { signal, ...dispatcherOptions } = options;
  return runLoops([new OutboxDispatcher(dispatcherOptions)], signal);
}

interface Loop {
  start(): void;
  stop(): Promise<void>;
}

function runLoops(loops: readonly Loop[], signal: AbortSignal | undefined): RunningLoops {
  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  const onAbort = () => void stop();
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      signal?.removeEventListener('abort', onAbort);
      await Promise.all(loops.map((loop) => loop.stop()));
      resolveStopped();
    })();
    return stopping;
  };
  if (signal?.aborted === true) {
    stopping = Promise.resolve();
    resolveStopped();
    return { stop: () => stopping as Promise<void>, stopped };
  }
  signal?.addEventListener('abort', onAbort, { once: true });
  for (const loop of loops) loop.start();
  return { stop, stopped };
}
