/**
 * A seeded pseudo-random source (mulberry32): the same seed draws the same faults, so every
 * scenario can be replayed with `npm run faults -- --seed N --scenario NAME`.
 */
export class SeededRandom {
  #state: number;

  constructor(readonly seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(0, items.length - 1)] as T;
  }
}

/** A fresh seed from the time and the process, for runs without --seed. */
export function freshSeed(): number {
  return (Date.now() ^ (process.pid << 16)) >>> 0;
}
