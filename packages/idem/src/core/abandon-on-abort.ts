export interface AbandonOptions<T> {
  /** Gets what `pending` settles to after it was abandoned (give a pooled connection back). */
  readonly onLate?: (value: T) => void;
  /**
   * Whether abandoning is still harmless (default: always). Once it answers false, for instance
   * because a transaction began its first statement, an abort no longer ends the wait, and the
   * caller gets the real outcome.
   */
  readonly abandonable?: () => boolean;
}

/**
 * Waits for `pending` unless `signal` aborts first, which rejects with the signal's reason at once.
 * Only for a wait that has done nothing yet, such as a pooled connection being handed out: what
 * `pending` settles to after it was abandoned goes to `onLate`, never to the caller.
 */
export function abandonOnAbort<T>(
  pending: Promise<T>,
  signal: AbortSignal | undefined,
  options: AbandonOptions<T> = {},
): Promise<T> {
  if (signal === undefined) return pending;
  const abandonable = options.abandonable ?? (() => true);
  return new Promise<T>((resolve, reject) => {
    let abandoned = false;
    const onAbort = () => {
      if (!abandonable()) return;
      abandoned = true;
      reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (abandoned) options.onLate?.(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
