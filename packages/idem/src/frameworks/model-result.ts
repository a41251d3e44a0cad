import type { IntentOutcome } from '../client/intent-outcome.js';

/**
 * What the model gets for one keyed tool call, as a JSON object:
 * - succeeded: the tool's own structured result, as the server sent it (`replayed: true` on a replay);
 * - failed: `{ status: 'failed', error: { code, message, retryable }, next_action? }`; nothing more
 *   will happen for this call;
 * - not final: `{ status: 'in_progress' | 'outcome_unknown', operation_id?, reason, next_action,
 *   intent_id }`. `next_action` says how to learn the outcome (the status tool, which stays callable,
 *   when there is an operation id) and that calling the tool again would be a new action: the agent
 *   resumes this one with its own key.
 */
export function modelResult(outcome: IntentOutcome, operationTool: string): Record<string, unknown> {
  if (outcome.status === 'succeeded') return outcome.result;
  const operation = outcome.operationId === undefined ? {} : { operation_id: outcome.operationId };
  if (outcome.status === 'failed') {
    const { code, message, retryable } = outcome.error;
    return {
      status: 'failed',
      error: { code, message, retryable },
      ...operation,
      ...(outcome.nextAction === undefined ? {} : { next_action: outcome.nextAction }),
    };
  }
  const again = `Do not call ${outcome.tool} again for this action: it may have taken effect, and a new call would be a new action.`;
  const nextAction =
    outcome.operationId === undefined
      ? `The outcome is not known yet. ${again} The agent resumes this call with its own key (intent ${outcome.intentId}), which cannot act twice.`
      : `Call ${operationTool} with operation_id ${outcome.operationId} to learn the outcome. ${again}`;
  return {
    status: outcome.reason === 'running' ? 'in_progress' : 'outcome_unknown',
    ...operation,
    reason: outcome.reason,
    next_action: nextAction,
    ...(outcome.reason === 'server_unknown' ? { server_next_action: outcome.nextAction } : {}),
    intent_id: outcome.intentId,
  };
}
