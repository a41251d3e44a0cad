/** A value, or a promise of it: what a synchronous engine (better-sqlite3) and an async one share. */
export type MaybePromise<T> = T | Promise<T>;

/** Options every async port method takes. An abort before the call starts MUST reject with the signal's reason. */
export interface SignalOption {
  readonly signal?: AbortSignal;
}
