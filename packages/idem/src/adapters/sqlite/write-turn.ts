import { absolutePath } from './sqlite-errors.js';
import { writeLockTimeout, type LockWait } from './lock-wait.js';

/** The last writer in line on each database file, among this process's asynchronous writers. */
const lines = new Map<string, Promise<void>>();

/**
 * A place in this process's line of asynchronous write transactions on one SQLite file (each on a
 * connection of its own, holding the write lock across event-loop turns, as Kysely's are). A
 * writer that takes its turn before trying the lock never meets another writer of this process
 * holding it: it waits for that writer's end, woken by it, instead of polling the database on the
 * clock; only other processes' writers make it poll. An in-memory or unnamed database has a
 * single connection: no line.
 */
export class WriteTurn {
  readonly #file: string | undefined;
  #state: 'waiting' | 'taken' | 'released' = 'waiting';
  #release: (() => void) | undefined;
  /** Settles once this writer and every one ahead of it have released. */
  #mine: Promise<void> | undefined;

  constructor(file: string | undefined) {
    this.#file = absolutePath(file);
  }

  /**
   * Joins the line (once; later calls return at once) and waits until every writer ahead has
   * released its turn, within `wait`'s bound: beyond it, writeLockTimeout. Rejects with the
   * signal's reason when it aborts (the place is given up).
   */
  async take(wait: LockWait, signal?: AbortSignal): Promise<void> {
    if (this.#state !== 'waiting' || this.#mine !== undefined) return;
    const file = this.#file;
    if (file === undefined) {
      this.#state = 'taken';
      return;
    }
    const ahead = lines.get(file);
    const mine = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
    const last = ahead === undefined ? mine : ahead.then(() => mine);
    this.#mine = last;
    lines.set(file, last);
    // Once every writer up to this one has released, and none joined after it, the line is empty.
    void last.then(() => {
      if (lines.get(file) === last) lines.delete(file);
    });
    if (ahead !== undefined && !(await wait.until(ahead, signal))) {
      throw writeLockTimeout(wait.timeoutMs);
    }
    this.#state = 'taken';
  }

  /** Lets the next writer in line go (after COMMIT or ROLLBACK, or when the wait was given up). */
  release(): void {
    if (this.#state === 'released') return;
    this.#state = 'released';
    this.#release?.();
  }
}
