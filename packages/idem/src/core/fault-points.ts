/**
 * Named places where tests inject failures. Unarmed points cost one map lookup. Actions run
 * synchronously where they are hit (inside a transaction for the store's points), so an action
 * that throws aborts exactly what a crash at that point would.
 */
export type FaultPoint =
  | 'after_claim' // write transaction open, identity looked up and found free
  | 'after_effect' // effect written, receipt not yet written
  | 'before_commit' // effect and receipt written, COMMIT not yet issued
  | 'after_commit' // committed, nothing returned yet
  | 'before_reply' // result built, not yet handed to the transport
  // Durable operations (worker):
  | 'before_dispatch' // attempt recorded (dispatched), provider not yet contacted
  | 'after_provider_reply' // provider replied with success, local record not yet written
  | 'after_receipt' // final record committed, nothing reported yet
  // Outbox:
  | 'outbox_after_send'; // message delivered, not yet marked done

/** What an armed point does when hit: throw to simulate a crash there, or record the hit. */
export type FaultAction = (point: FaultPoint) => void;

/**
 * A set of armed fault points for tests: the executor, the worker and the outbox call `hit` at each
 * named point, and an armed point runs its action there (throw to simulate a crash). Unarmed, a hit
 * does nothing.
 */
export class FaultPoints {
  readonly #armed = new Map<FaultPoint, { action: FaultAction; remaining: number }>();

  /** Arms `point` to run `action` on its next `times` hits (default: once). */
  arm(point: FaultPoint, action: FaultAction, times = 1): void {
    this.#armed.set(point, { action, remaining: times });
  }

  /** Disarms `point`, or every point when none is named. */
  disarm(point?: FaultPoint): void {
    if (point === undefined) this.#armed.clear();
    else this.#armed.delete(point);
  }

  /** Runs `point`'s action if it is armed (counting down its remaining hits); else nothing. */
  hit(point: FaultPoint): void {
    const armed = this.#armed.get(point);
    if (armed === undefined) return;
    armed.remaining -= 1;
    if (armed.remaining <= 0) this.#armed.delete(point);
    armed.action(point);
  }
}
