import type { ToolError } from './tool-reply.js';

/**
 * Why an outcome could not be established within the budget:
 * - `no_reply`: no definite answer (timeouts, dropped connections, `busy` until the end);
 * - `running`: the server holds the operation and it is still accepted or running;
 * - `server_unknown`: the server itself reports `outcome_unknown` (an external effect it cannot
 *   verify) and an operator has not settled it yet.
 * In every case the intent stays in the journal; resuming it cannot act twice.
 */
export type UnknownReason = 'no_reply' | 'running' | 'server_unknown';

interface OutcomeBase {
  /** The journal's id for this intended action. */
  readonly intentId: string;
  readonly tool: string;
  /** The idempotency key sent on every attempt. */
  readonly key: string;
  /** The server's operation id, once any reply carried one. */
  readonly operationId: string | undefined;
  /** Tool calls made for this outcome (polls of the operation tool not included). */
  readonly attempts: number;
}

/**
 * The typed result of one intended action. Expected failures are values, not exceptions: only a
 * caller's abort, a misuse of the API (arguments that are not JSON, an unknown intent) or a broken
 * journal throw.
 */
export type IntentOutcome =
  | (OutcomeBase & {
      readonly status: 'succeeded';
      /** The tool's result (for Idem tools: status, operation_id, resource_id and business fields). */
      readonly result: Record<string, unknown>;
      /** True when this answer was a replay of an earlier execution. */
      readonly replayed: boolean;
    })
  | (OutcomeBase & {
      readonly status: 'failed';
      /** Definitive: the action did not take effect, or failed as recorded by the server. */
      readonly error: ToolError;
      readonly nextAction: string | undefined;
    })
  | (OutcomeBase & {
      readonly status: 'outcome_unknown';
      readonly reason: UnknownReason;
      /** One sentence saying what to do next (resume the intent, or check the operation). */
      readonly nextAction: string;
      /** The last error seen, if any. */
      readonly lastError: ToolError | undefined;
    });

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An outcome without the fields every outcome shares: what a step decides, before it is stamped. */
export type OutcomeFields = DistributiveOmit<IntentOutcome, keyof OutcomeBase>;
