import { z } from 'zod';
import { ERROR_CODES, type ErrorCode, type IdemError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { CallOutcome } from '../executor/executor.js';

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
  busy: 'rejected',
  unavailable: 'rejected',
  in_progress: 'running',
  outcome_unknown: 'outcome_unknown',
  internal: 'failed',
};

/** The structured form of an error, as it goes on the wire. */
export function errorContent(error: IdemError, status?: (typeof RESULT_STATUSES)[number]): JsonObject {
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
  if (error.nextAction !== undefined) body.next_action = error.nextAction;
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

/** Maps an executor outcome to the wire: the stored result plus `replayed`, or a coded error. */
export function outcomeResult(outcome: CallOutcome): IdemToolResult {
  if (outcome.ok) return toolResult({ ...outcome.result, replayed: outcome.replayed });
  return toolResult(errorContent(outcome.error, outcome.status), true);
}
