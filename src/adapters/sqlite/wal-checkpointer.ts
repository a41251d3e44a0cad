import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The worker's code: its own connection, a PASSIVE checkpoint every `intervalMs`, until told to stop. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    // SQLITE_BUSY and the like: the next tick tries again; a checkpoint is never required here.
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  try {
    db.pragma('wal_checkpoint(PASSIVE)'); // leave the WAL backfilled, so the next writer rewinds it
  } catch (error) {
    // As above.
  }
  db.close();
  parentPort.close();
});
`;

export interface WalCheckpointerOptions {
  /** How often the worker checkpoints, ms. Default 10. */
  intervalMs?: number;
}

/**
 * Copies committed WAL frames into the database file from a worker thread, so that callers rarely
 * pay for it. better-sqlite3 runs SQLite on the event-loop thread: an automatic checkpoint (every
 * 1,000 WAL pages, started by the COMMIT that crosses the threshold) copies those pages and
 * fsyncs the database file while every caller waits. With the worker keeping the WAL backfilled,
 * that automatic checkpoint (left on as a safety net) finds little or nothing to copy, and the WAL
 * is rewound and reused instead of growing. PASSIVE never blocks a writer or a reader.
 */
export class WalCheckpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #stopped: Promise<void> | undefined;

  private constructor(worker: Worker) {
    this.#worker = worker;
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()));
  }

  /** Starts a checkpointer for the database file at `path` (which must exist, in WAL mode). */
  static start(path: string, options: WalCheckpointerOptions = {}): WalCheckpointer {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path, driver, intervalMs: options.intervalMs ?? 10 },
    });
    // Never keeps the process alive, and a failure to open is not the caller's failure.
    worker.unref();
    worker.on('error', () => undefined);
    return new WalCheckpointer(worker);
  }

  /** Stops the worker after a last checkpoint and closes its connection; resolves when it has exited. */
  stop(): Promise<void> {
    if (this.#stopped === undefined) {
      // Whoever awaits the stop must keep the process alive until the worker is gone.
      this.#worker.ref();
      this.#worker.postMessage('stop');
      // A worker stuck in a checkpoint is ended after a second; one that already exited is not affected.
      const force = setTimeout(() => void this.#worker.terminate(), 1000);
      this.#stopped = this.#exited.finally(() => clearTimeout(force));
    }
    return this.#stopped;
  }
}
