/**
 * The bytes of request bodies held in memory across all in-flight requests of one server. A request
 * reserves what it buffers (its declared length up front, or each chunk as it arrives) and releases
 * it when its response is done; a reservation that would pass the limit is refused, and the caller
 * answers 503, so that many slow or large uploads cannot grow the process without bound.
 */
export class BodyBudget {
  #used = 0;

  constructor(readonly limitBytes: number) {}

  get usedBytes(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit under the limit; false (and nothing taken) otherwise. */
  reserve(bytes: number): boolean {
    if (this.#used + bytes > this.limitBytes) return false;
    this.#used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}
