import { createRequire } from 'node:module';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * The worker's code: its own connection and, every `intervalMs`, a PASSIVE checkpoint when at least
 * `minFrames` WAL frames wait to be copied (read from the WAL-index header in the -shm file, as
 * documented in https://sqlite.org/walformat.html: mxFrame at byte 16, nBackfill at byte 96, native
 * byte order). A header it cannot read counts as "checkpoint now". On the message, one last
 * checkpoint, then it exits.
 */
const WORKER_SOURCE = `
const { readSync, openSync, closeSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const db = workerData.driver === 'node:sqlite'
  ? new (require('node:sqlite').DatabaseSync)(workerData.path)
  : new (require(workerData.driver))(workerData.path, { fileMustExist: true });
db.exec('PRAGMA busy_timeout = 0');
const header = Buffer.alloc(136);
let shm;
function framesToCopy() {
  if (workerData.minFrames <= 1) return Infinity;
  try {
    if (shm === undefined) shm = openSync(workerData.path + '-shm', 'r');
    if (readSync(shm, header, 0, 136, 0) < 136) return Infinity;
    const le = workerData.littleEndian;
    const mxFrame = le ? header.readUInt32LE(16) : header.readUInt32BE(16);
    const nBackfill = le ? header.readUInt32LE(96) : header.readUInt32BE(96);
    return mxFrame - nBackfill;
  } catch (error) {
    return Infinity;
  }
}
function checkpoint() {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch (error) {
    // SQLITE_BUSY and the like: the next tick tries again; a checkpoint is never required here.
  }
}
const timer = setInterval(() => {
  if (framesToCopy() >= workerData.minFrames) checkpoint();
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint(); // leave the WAL backfilled, so the next writer rewinds it
  if (shm !== undefined) closeSync(shm);
  db.close();
  parentPort.close();
});
`;

export interface WalCheckpointerOptions {
  /** How often the worker looks at the WAL, ms. Default 10. */
  intervalMs?: number;
  /**
   * Checkpoint only once this many WAL frames wait to be copied. Default 1: whenever there is
   * anything. A larger value trades a longer WAL for fewer fsyncs of the database file, and lets a
   * page written by many commits be copied once.
   */
  minFrames?: number;
  /** Which engine the worker's connection uses. Default `'better-sqlite3'`. */
  driver?: 'better-sqlite3' | 'node:sqlite';
}

/**
 * Copies committed WAL frames into the database file from a worker thread, so that callers rarely
 * pay for it. better-sqlite3 runs SQLite on the event-loop thread: an automatic checkpoint (every
 * 1,000 WAL pages, started by the COMMIT that crosses the threshold) copies those pages and
 * fsyncs the database file while every caller waits. With the worker keeping the WAL backfilled,
 * the writer's automatic checkpoint (set above `minFrames`, as a safety net) finds nothing to copy,
 * and the WAL is rewound and reused instead of growing. PASSIVE never blocks a writer or a reader.
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
    const driver =
      options.driver === 'node:sqlite'
        ? 'node:sqlite'
        : createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        path,
        driver,
        intervalMs: options.intervalMs ?? 10,
        minFrames: options.minFrames ?? 1,
        littleEndian: endianness() === 'LE',
      },
    });
    // Never keeps the process alive, and a failure to open is not the caller's failure.
    worker.unref();
    worker.on('error', () => undefined);
    return new WalCheckpointer(worker);
  }

  /** Calls `listener` once the worker has exited, whether stopped or failed (e.g. it could not open). */
  onExit(listener: () => void): void {
    void this.#exited.then(listener);
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
