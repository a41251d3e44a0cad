/** Weight of the newest batch in the running average of writes per commit. */
const WEIGHT = 1 / 16;

/** The average number of writes per commit at or above which callers count as concurrent. */
export const CONCURRENT_AT = 1.5;

/** The average below which they count as lone again (hysteresis: a lull does not flip it back). */
export const LONE_BELOW = 1.1;

/**
 * Whether commits are currently shared by concurrent callers, judged from how many writes each
 * group-commit batch carried: a running average of the batch sizes, with hysteresis, so that one
 * chance overlap of two lone callers changes nothing and a burst of concurrency is noticed within
 * a couple of batches. Pure: the caller reports each committed batch.
 */
export class CommitConcurrency {
  #average = 1;
  #concurrent = false;

  /** Whether the recent commits carried several writes each. */
  get concurrent(): boolean {
    return this.#concurrent;
  }

  /** Records a committed batch of `writes`; returns true when `concurrent` changed. */
  record(writes: number): boolean {
    if (!(writes >= 1)) return false;
    this.#average += (writes - this.#average) * WEIGHT;
    const next = this.#concurrent ? this.#average >= LONE_BELOW : this.#average >= CONCURRENT_AT;
    if (next === this.#concurrent) return false;
    this.#concurrent = next;
    return true;
  }
}
