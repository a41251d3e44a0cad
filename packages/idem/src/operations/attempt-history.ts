import type { AttemptRecord } from '../core/operation-record.js';

/**
 * The attempt-row outcome of an attempt that provably never reached the external system (its
 * connection was refused). Every other row, an open or interrupted one included, may have reached it.
 */
export const NOT_SENT = 'not_sent';

/** What an operation's attempt rows say about the requests that may have reached the external system. */
export interface AttemptHistory {
  /** How many attempts may have reached it: all but those recorded `not_sent`. */
  readonly reached: number;
  /** Epoch ms: the start of the first attempt that may have reached it; undefined when none may have. */
  readonly firstReachedAt: number | undefined;
  /** Epoch ms: the start of the last attempt that may have reached it; undefined when none may have. */
  readonly lastReachedAt: number | undefined;
}

/**
 * Reads `attempts` (any order) for what may have reached the external system. Conservative: an
 * attempt counts as reaching it unless its row says `not_sent`, so a crash between a refusal and
 * its row leaves an attempt that counts.
 */
export function attemptHistory(attempts: readonly AttemptRecord[]): AttemptHistory {
  let reached = 0;
  let firstReachedAt: number | undefined;
  let lastReachedAt: number | undefined;
  for (const attempt of attempts) {
    if (attempt.outcome === NOT_SENT) continue;
    reached += 1;
    firstReachedAt = Math.min(firstReachedAt ?? attempt.startedAt, attempt.startedAt);
    lastReachedAt = Math.max(lastReachedAt ?? attempt.startedAt, attempt.startedAt);
  }
  return { reached, firstReachedAt, lastReachedAt };
}
