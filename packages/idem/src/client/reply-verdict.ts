import { isPlainObject, replyError, stringField, type ToolError, type ToolReply } from './tool-reply.js';

/**
 * What the client does with one reply to a mutating call:
 * - `succeeded` / `failed`: settled, return it;
 * - `retry`: resend with the same key (busy, in_progress, a retryable unavailable or outcome_unknown,
 *   or any error marked retryable that is not on the never-retry list);
 * - `follow`: the operation exists but is not finished (accepted, running) or the server cannot tell
 *   (outcome_unknown): poll the operation tool;
 * - `unknown`: the server cannot tell and gave no operation id to follow.
 */
export type ReplyVerdict =
  | {
      readonly kind: 'succeeded';
      readonly result: Record<string, unknown>;
      readonly replayed: boolean;
      readonly operationId: string | undefined;
    }
  | {
      readonly kind: 'failed' | 'retry' | 'unknown';
      readonly error: ToolError;
      readonly operationId: string | undefined;
      readonly nextAction: string | undefined;
    }
  | {
      readonly kind: 'follow';
      readonly state: 'accepted' | 'running' | 'outcome_unknown';
      readonly operationId: string;
      readonly error: ToolError | undefined;
      readonly nextAction: string | undefined;
    };

/** Codes that mean "this exact call will never succeed": retrying them only repeats the refusal. */
export const NEVER_RETRIED: ReadonlySet<string> = new Set([
  'payload_conflict',
  'forbidden',
  'invalid_argument',
  'key_expired',
  'version_conflict',
  'not_found',
  'internal',
]);

const RUNNING = new Set(['accepted', 'running', 'cancel_requested']);

export function replyVerdict(reply: ToolReply): ReplyVerdict {
  const { content } = reply;
  const operationId = stringField(content, 'operation_id');
  const nextAction = stringField(content, 'next_action');
  const status = stringField(content, 'status');
  if (!reply.isError) {
    if (status === 'cancelled') {
      return {
        kind: 'failed',
        error: {
          code: 'cancelled',
          message: 'the operation was cancelled; nothing was done',
          retryable: false,
        },
        operationId,
        nextAction,
      };
    }
    if (status !== undefined && RUNNING.has(status) && operationId !== undefined) {
      return {
        kind: 'follow',
        state: status === 'accepted' ? 'accepted' : 'running',
        operationId,
        error: undefined,
        nextAction,
      };
    }
    return { kind: 'succeeded', result: content, replayed: content.replayed === true, operationId };
  }
  const error = replyError(content) ?? {
    code: 'tool_error',
    message:
      isPlainObject(content) && typeof content.text === 'string'
        ? content.text
        : 'the tool reported an error',
    retryable: false,
  };
  if (NEVER_RETRIED.has(error.code)) return { kind: 'failed', error, operationId, nextAction };
  if (error.code === 'busy' || error.code === 'in_progress')
    return { kind: 'retry', error, operationId, nextAction };
  if (error.code === 'outcome_unknown') {
    if (error.retryable) return { kind: 'retry', error, operationId, nextAction };
    if (operationId !== undefined) {
      return { kind: 'follow', state: 'outcome_unknown', operationId, error, nextAction };
    }
    return { kind: 'unknown', error, operationId, nextAction };
  }
  return { kind: error.retryable ? 'retry' : 'failed', error, operationId, nextAction };
}
