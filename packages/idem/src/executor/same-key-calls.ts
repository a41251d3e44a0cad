import type { Clock } from '../core/clock.js';
import type { OperationIdentity } from '../core/operation-identity.js';
import type { ReceiptView } from '../core/receipt.js';

/** The leader ended without committing a record (it replayed, was refused or failed). */
export const NOTHING = 'nothing';
/** The follower's wait for its leader ran out. */
export const WAITED = 'waited';

/** What a follower learns: the leader's committed record, NOTHING or WAITED. */
export type Followed = ReceiptView | typeof NOTHING | typeof WAITED;

/**
 * The calls of one executor in flight, by identity: while one call of an identity (the leader)
 * looks its key up and commits, the others of the same identity that arrive meanwhile (a retry
 * storm) wait for it instead of each reading the key, queueing a write and reading it again under
 * the lock. When the leader executed, each follower decides on the record it committed (with its
 * own fingerprint, version and clock: a replay, a conflict, ...); when it did anything else
 * (replayed, was refused, failed), the followers start over: one leads (lookup first), the others
 * follow it.
 *
 * Why a follower may answer from the leader's record without reading it: it joined before the
 * leader's commit settled, and the commit is the moment that record came to be; a record that a
 * local effect committed `succeeded` (or a durable operation `accepted`, which the follower then
 * waits on by reading the ledger) does not change in the microseconds between that COMMIT and its
 * settling here. A lookup's result is never shared: its read may predate a follower's arrival.
 * Only calls of this executor (this process) are joined; others meet in the database as before.
 */
export class SameKeyCalls {
  readonly #leaders = new Map<string, Lead>();

  /**
   * When another call of `identity` leads: waits for it, at most `waitMs` on `clock` (from the first
   * follower's arrival: one timer per lead, so a later follower may give up sooner), and resolves
   * with the record it committed, `NOTHING` when it ended without committing one (the follower may
   * follow the next leader, or lead), or `WAITED` when the wait ran out (the follower then goes its
   * own way, as if it had come alone). Undefined at once when no call leads. Rejects with the
   * signal's reason when `signal` aborts first (the leader goes on).
   */
  follow(
    identity: OperationIdentity,
    wait: { readonly clock: Clock; readonly waitMs: number; readonly signal?: AbortSignal | undefined },
  ): Promise<Followed> | undefined {
    if (this.#leaders.size === 0) return undefined;
    const lead = this.#leaders.get(keyOf(identity));
    if (lead === undefined) return undefined;
    let { waited } = lead;
    if (waited === undefined) {
      const led = new Promise<Followed>((resolve) => {
        lead.end = resolve;
      });
      // Stopped when the lead ends (see lead), so no timer outlives it.
      lead.timer = new AbortController();
      waited = lead.waited = Promise.race([
        led,
        wait.clock.sleep(wait.waitMs, { signal: lead.timer.signal }).then(
          (): Followed => WAITED,
          (): Followed => WAITED,
        ),
      ]);
    }
    const { signal } = wait;
    if (signal === undefined) return waited;
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const aborted = () => reject(signal.reason);
      signal.addEventListener('abort', aborted, { once: true });
      void waited.then((followed) => {
        signal.removeEventListener('abort', aborted);
        resolve(followed);
      });
    });
  }

  /**
   * Makes this call the leader of `identity` when no call leads it; returns how to end the lead:
   * with the record the call committed, or with nothing. Ending it more than once, or ending the
   * lead of a call that found a leader already, does nothing.
   */
  lead(identity: OperationIdentity): (committed?: ReceiptView) => void {
    const key = keyOf(identity);
    if (this.#leaders.has(key)) return noop;
    // The promise is made when a first follower comes: a call nobody follows allocates none.
    const lead: Lead = {};
    this.#leaders.set(key, lead);
    return (committed) => {
      if (this.#leaders.get(key) !== lead) return;
      // Gone from the map before anyone hears of the record: no call joins a settled commit.
      this.#leaders.delete(key);
      lead.timer?.abort(LEAD_ENDED);
      lead.end?.(committed ?? NOTHING);
    };
  }

  /** Identities led now (for tests). */
  get size(): number {
    return this.#leaders.size;
  }
}

/** One leader's call: what it committed, and its followers' bounded wait once one came. */
interface Lead {
  /**
   * Made when the first follower comes: resolves (never rejects) when the lead ends, with the
   * record committed or NOTHING, or with WAITED once the wait ran out.
   */
  waited?: Promise<Followed>;
  /** Ends `waited` with what the lead committed. */
  end?: (followed: Followed) => void;
  /** Stops the wait's timer when the lead ends. */
  timer?: AbortController;
}

function noop(): void {}

/** The reason a follower's timer stops when its lead ends (a constant: no DOMException per lead). */
const LEAD_ENDED = Symbol('lead ended');

/**
 * The identity as one string. Its parts never hold U+0000 (principal and workspace are refused
 * before this, operation names are checked at registration, keys are printable ASCII), so the
 * join is unambiguous.
 */
function keyOf(identity: OperationIdentity): string {
  return `${identity.principal}\u0000${identity.workspace}\u0000${identity.operation}\u0000${identity.version}\u0000${identity.key}`;
}
