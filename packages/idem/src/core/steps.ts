import { IdemError } from './errors.js';

/**
 * An algorithm written once for synchronous and asynchronous engines: a generator that yields each
 * value it needs (a plain value, or a promise of one) and gets it back settled. `runSync` drives it
 * within the current tick (better-sqlite3 transactions), `runAsync` awaits each step.
 */
export type Steps<T> = Generator<unknown, T, unknown>;

/** Yields a value that may be a promise and returns it settled, typed. */
export function* step<T>(value: T | Promise<T>): Steps<T> {
  return (yield value) as T;
}

/** Drives `steps` synchronously; a step that is a promise throws `internal` (named by `what`). */
export function runSync<T>(steps: Steps<T>, what: string): T {
  let next = steps.next();
  while (!next.done) {
    const value = next.value;
    if (isThenable(value)) {
      // Settle nothing later: close the generator so its finally blocks run now.
      (value as Promise<unknown>).catch(() => undefined);
      next = steps.throw(
        new IdemError('internal', `${what} must be synchronous: it runs inside the transaction`),
      );
      continue;
    }
    next = steps.next(value);
  }
  return next.value;
}

/** Drives `steps`, awaiting every step; a rejected step is thrown into the generator. */
export async function runAsync<T>(steps: Steps<T>): Promise<T> {
  let next = steps.next();
  while (!next.done) {
    let settled: unknown;
    try {
      settled = isThenable(next.value) ? await next.value : next.value;
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(settled);
  }
  return next.value;
}

/** Drives `steps` synchronously or not; the synchronous result still comes as a value. */
export function run<T>(steps: Steps<T>, synchronous: boolean, what: string): T | Promise<T> {
  return synchronous ? runSync(steps, what) : runAsync(steps);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** `fn(value)` now for a plain value, after it settles for a promise: sequencing for either engine. */
export function andThen<T, U>(value: T | Promise<T>, fn: (settled: T) => U | Promise<U>): U | Promise<U> {
  return isThenable(value) ? (value as Promise<T>).then(fn) : fn(value as T);
}
