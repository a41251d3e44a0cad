import { IdemError } from '../../core/errors.js';
import type { OperationIdentity } from '../../core/operation-identity.js';
import type { Existing } from '../../core/receipt.js';
import type { SignalOption } from '../../ports/maybe-async.js';

/** The most identities one statement looks up; more in one turn make several statements. */
export const MAX_LOOKUP_BATCH = 64;

interface Waiting {
  readonly identity: OperationIdentity;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (found: Existing | undefined) => void;
  readonly reject: (error: unknown) => void;
  onAbort: (() => void) | undefined;
  settled: boolean;
}

/**
 * Lock-free lookups (ReceiptStore.lookup) that arrive in one turn of the event loop, read in one
 * statement (issue 27). On a database reached over a socket, each statement costs a write that
 * wakes a backend, and with several calls in flight those writes, more than the statements, set
 * the rate: calls that resume together (their previous answers came in one read of the socket) send
 * their next lookups together.
 *
 * What each caller gets is what a lookup of its own would get: every lookup reads the committed
 * data when its statement runs, after the call asked, and nothing is kept for a later one. A lookup
 * waits only until the promise jobs of its turn have run (`process.nextTick`); one alone is sent as
 * the single-identity statement (with `firstAtOnce`, one that comes while no other is under way is
 * read at once). The same serves SQLite, where each statement outside a transaction takes and
 * drops the WAL's read lock (two system calls): the lookups of a turn share one read transaction.
 * A caller's abort rejects its own lookup at once with the signal's reason (the others go on).
 * When the statement of several fails with an error that is not retryable (a statement error, not
 * the database's availability), each identity is looked up alone, so that one caller's input never
 * fails another's lookup; a retryable error (`busy`, `unavailable`) goes to each caller of the
 * batch.
 */
export class LookupBatcher {
  readonly #readMany: (identities: readonly OperationIdentity[]) => Promise<(Existing | undefined)[]>;
  readonly #readOne: (identity: OperationIdentity, options: SignalOption) => Promise<Existing | undefined>;
  readonly #firstAtOnce: boolean;
  #waiting: Waiting[] = [];
  /**
   * With `firstAtOnce`: lookups read at once whose answer has not reached its caller yet. While
   * one has not, others are under way in this turn: they wait for each other.
   */
  #answering = 0;
  readonly #answered = (): void => {
    this.#answering -= 1;
  };

  /**
   * `firstAtOnce`: a lookup that comes while no other is under way is read at once, alone; only
   * those that come while one is (until its answer reached its caller) wait for each other, to the
   * turn's end. For a driver whose reads cost no round trip (SQLite), where waiting for the turn to
   * end would cost a lone caller more than reading together saves.
   */
  constructor(
    readMany: (identities: readonly OperationIdentity[]) => Promise<(Existing | undefined)[]>,
    readOne: (identity: OperationIdentity, options: SignalOption) => Promise<Existing | undefined>,
    options: { readonly firstAtOnce?: boolean } = {},
  ) {
    this.#readMany = readMany;
    this.#readOne = readOne;
    this.#firstAtOnce = options.firstAtOnce ?? false;
  }

  /** The record or tombstone of `identity`'s key, read with the other lookups of this turn. */
  lookup(identity: OperationIdentity, options: SignalOption = {}): Promise<Existing | undefined> {
    const signal = options.signal;
    if (signal?.aborted === true) return Promise.reject(signal.reason as unknown);
    if (this.#firstAtOnce && this.#answering === 0 && this.#waiting.length === 0) {
      this.#answering += 1;
      const found = this.#readOne(identity, options);
      found.then(this.#answered, this.#answered);
      return found;
    }
    return new Promise<Existing | undefined>((resolve, reject) => {
      const waiting: Waiting = { identity, signal, resolve, reject, onAbort: undefined, settled: false };
      if (signal !== undefined) {
        waiting.onAbort = () => settle(waiting, () => reject(signal.reason as unknown));
        signal.addEventListener('abort', waiting.onAbort, { once: true });
      }
      if (this.#waiting.length === 0) process.nextTick(() => this.#flush());
      this.#waiting.push(waiting);
      if (this.#waiting.length === MAX_LOOKUP_BATCH) this.#flush();
    });
  }

  #flush(): void {
    const batch = this.#waiting.filter((w) => !w.settled);
    this.#waiting = [];
    if (batch.length === 1) this.#alone(batch[0] as Waiting);
    else if (batch.length > 1) void this.#together(batch);
  }

  #alone(waiting: Waiting): void {
    if (waiting.settled) return;
    this.#readOne(waiting.identity, { signal: waiting.signal }).then(
      (found) => settle(waiting, () => waiting.resolve(found)),
      (error: unknown) => settle(waiting, () => waiting.reject(error)),
    );
  }

  async #together(batch: readonly Waiting[]): Promise<void> {
    let found: (Existing | undefined)[];
    try {
      found = await this.#readMany(batch.map((w) => w.identity));
      if (found.length !== batch.length) {
        throw new IdemError('internal', `a lookup of ${batch.length} keys answered ${found.length}`);
      }
    } catch (error) {
      if (error instanceof IdemError && error.retryable) {
        for (const waiting of batch) settle(waiting, () => waiting.reject(error));
      } else {
        for (const waiting of batch) this.#alone(waiting);
      }
      return;
    }
    batch.forEach((waiting, i) => settle(waiting, () => waiting.resolve(found[i])));
  }
}

/** Settles a waiting lookup once: the first of its answer and its caller's abort wins. */
function settle(waiting: Waiting, answer: () => void): void {
  if (waiting.settled) return;
  waiting.settled = true;
  if (waiting.onAbort !== undefined) waiting.signal?.removeEventListener('abort', waiting.onAbort);
  answer();
}
