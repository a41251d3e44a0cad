import type { AttemptRecord } from '../core/operation-record.js';

/** One attempt as `idem ops show` prints it in `attempts_detail`. */
export interface AttemptView {
  readonly attempt_id: string;
  readonly number: number;
  readonly worker_id: string;
  /** ISO 8601. */
  readonly started_at: string;
  /** ISO 8601; absent while the attempt is running. */
  readonly ended_at?: string;
  readonly outcome?: string;
  readonly detail?: string;
}

/**
 * An attempt in the names and time format of every other output field: snake_case, ISO 8601
 * times; `ended_at`, `outcome` and `detail` only when recorded. The operation id is left out (the
 * attempt is shown under its operation).
 */
export function attemptView(attempt: AttemptRecord): AttemptView {
  return {
    attempt_id: attempt.attemptId,
    number: attempt.number,
    worker_id: attempt.workerId,
    started_at: new Date(attempt.startedAt).toISOString(),
    ...(attempt.endedAt === undefined ? {} : { ended_at: new Date(attempt.endedAt).toISOString() }),
    ...(attempt.outcome === undefined ? {} : { outcome: attempt.outcome }),
    ...(attempt.detail === undefined ? {} : { detail: attempt.detail }),
  };
}
