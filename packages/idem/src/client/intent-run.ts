import type { RetryPolicy } from '../core/retry-policy.js';
import type { JournalIntent } from './intent-journal.js';
import type { ToolError } from './tool-reply.js';

/**
 * Mutable bookkeeping of one run of one intent, shared by IdemClient and followOperation: the
 * budget is measured from `started` on the client's monotonic clock.
 */
export interface IntentRun {
  readonly intent: JournalIntent;
  readonly policy: RetryPolicy;
  readonly started: number;
  readonly signal: AbortSignal | undefined;
  attempts: number;
  operationId: string | undefined;
  lastError: ToolError | undefined;
}
