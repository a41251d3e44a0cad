import type { IdemError, NextStep } from '../core/errors.js';

/**
 * The names that the follow-up sentences of a tool's results use. The defaults are the reference
 * server's: its status tool `get_operation` and the `idem ops resolve` command.
 */
export interface FollowUpNames {
  /** The read tool that reports an operation by `operation_id`. Default `get_operation`. */
  readonly statusTool?: string;
  /**
   * How your operators settle an operation whose outcome is unknown, said in parentheses after the
   * sentence. Default `idem ops resolve`; an empty string leaves the parentheses out.
   */
  readonly operatorHint?: string;
}

/** The status tool a follow-up sentence names unless told otherwise (`FollowUpNames.statusTool`). */
export const DEFAULT_STATUS_TOOL = 'get_operation';
/** The operator command a follow-up sentence names unless told otherwise (`FollowUpNames.operatorHint`). */
export const DEFAULT_OPERATOR_HINT = 'idem ops resolve';

/** The sentence a model follows for `step` on operation `operationId`. */
export function followUpText(step: NextStep, operationId: string, names: FollowUpNames = {}): string {
  switch (step) {
    case 'follow_operation':
      return `Call ${names.statusTool ?? DEFAULT_STATUS_TOOL} with operation_id ${operationId} to see its state; retrying with the same idempotency_key and arguments is also safe.`;
    case 'operator_settles': {
      const hint = names.operatorHint ?? DEFAULT_OPERATOR_HINT;
      return `An operator must check whether the action took effect and settle operation ${operationId}${hint === '' ? '' : ` (${hint})`}.`;
    }
    case 'new_key':
      return 'Nothing was done. Use a new idempotency_key to try again.';
    case 'inspect_operation':
      return `Call ${names.statusTool ?? DEFAULT_STATUS_TOOL} with operation_id ${operationId} to see what happened to the original action. For a new action, generate a new idempotency_key.`;
  }
}

/**
 * An error's `next_action`: its own sentence when it has one (a durable handler's "check the
 * provider for ..."), else its next step in words, else none.
 */
export function nextActionOf(error: IdemError, names?: FollowUpNames): string | undefined {
  if (error.nextAction !== undefined) return error.nextAction;
  if (error.nextStep === undefined || error.operationId === undefined) return undefined;
  return followUpText(error.nextStep, error.operationId, names);
}
