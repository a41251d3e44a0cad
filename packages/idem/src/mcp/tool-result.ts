import { z } from 'zod';
import { ERROR_CODES, type ErrorCode, type IdemError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { CallOutcome } from '../executor/executor.js';
import { followUpText, nextActionOf, type FollowUpNames } from './follow-up.js';

export const RESULT_STATUSES = [
  'succeeded',
  'accepted',
  'running',
  'cancel_requested',
  'cancelled',
  'rejected',
  'failed',
  'outcome_unknown',
] as const;

/**
 * One output schema for success and error results alike: the MCP client validates
 * `structuredContent` against it even when `isError` is set. Business fields may stand beside.
 */
export const idemResultShape = {
  status: z.enum(RESULT_STATUSES),
  operation_id: z.string().optional(),
  resource_id: z.string().optional(),
  replayed: z.boolean().optional(),
  error: z
    .object({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      retryable: z.boolean(),
      retry_after_ms: z.number().int().nonnegative().optional(),
    })
    .optional(),
  next_action: z.string().optional(),
};

/**
 * Idem's output schema for every tool result (success and error alike): a zod object over the result
 * shape above that lets business fields through.
 */
export const idemResultSchema = z.looseObject(idemResultShape);

/**
 * A tool result as MCP's `CallToolResult` carries it, without the SDK's types, so that any MCP
 * server (SDK v2 or 1.x, FastMCP, a hand-written `tools/call` handler) can return it as is.
 */
export type IdemToolResult = {
  content: { type: 'text'; text: string }[];
  structuredContent: JsonObject;
  isError?: boolean;
};

const STATUS_BY_CODE: Record<ErrorCode, (typeof RESULT_STATUSES)[number]> = {
  invalid_argument: 'rejected',
  payload_conflict: 'rejected',
  forbidden: 'rejected',
  not_found: 'rejected',
  key_expired: 'rejected',
  version_conflict: 'rejected',
  busy: 'rejected',
  unavailable: 'rejected',
  in_progress: 'running',
  outcome_unknown: 'outcome_unknown',
  aborted: 'rejected',
  internal: 'failed',
};

/**
 * The structured form of an error, as it goes on the wire. `next_action` is the error's own sentence,
 * or its next step worded with `names` (default: `get_operation`, `idem ops resolve`).
 */
export function errorContent(
  error: IdemError,
  status?: (typeof RESULT_STATUSES)[number],
  names?: FollowUpNames,
): JsonObject {
  const body: JsonObject = {
    status: status ?? STATUS_BY_CODE[error.code],
    error: {
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      ...(error.retryAfterMs === undefined ? {} : { retry_after_ms: Math.ceil(error.retryAfterMs) }),
    },
  };
  if (error.operationId !== undefined) body.operation_id = error.operationId;
  const nextAction = nextActionOf(error, names);
  if (nextAction !== undefined) body.next_action = nextAction;
  return body;
}

/** A CallToolResult with `structuredContent` and the same JSON as text. */
export function toolResult(content: JsonObject, isError = false): IdemToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(content) }],
    structuredContent: content,
    ...(isError ? { isError: true } : {}),
  };
}

/**
 * Maps an executor outcome to the wire: the stored result plus `replayed` (and, for an accepted or
 * cancelled operation, `next_action` worded with `names`), or a coded error; a stored `failed` or
 * `outcome_unknown` operation's error also carries `replayed`, `attempts` and its stored `result`
 * (evidence), as `get_operation` shows them.
 */
export function outcomeResult(outcome: CallOutcome, names?: FollowUpNames): IdemToolResult {
  if (outcome.ok) {
    const content: JsonObject = { ...outcome.result };
    if (outcome.nextStep !== undefined && !('next_action' in content)) {
      content.next_action = followUpText(outcome.nextStep, outcome.operationId, names);
    }
    content.replayed = outcome.replayed;
    return toolResult(content);
  }
  const content = errorContent(outcome.error, outcome.status, names);
  // A stored failed or outcome_unknown operation: marked like any replay, with its evidence.
  if (outcome.evidence !== undefined) {
    content.attempts = outcome.evidence.attempts;
    if (outcome.evidence.result !== undefined) content.result = outcome.evidence.result;
  }
  if (outcome.replayed !== undefined) content.replayed = outcome.replayed;
  return toolResult(content, true);
}
