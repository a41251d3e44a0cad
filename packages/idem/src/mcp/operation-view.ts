import type { JsonObject, JsonValue } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import { isActive } from '../core/operation-state.js';
import { outcomeOf } from '../executor/call-outcome.js';
import { nextActionOf, type FollowUpNames } from './follow-up.js';
import { errorContent } from './tool-result.js';

/**
 * An operation as the status tools and the CLI show it: snake_case fields, ISO times, the result
 * when done, and, for a state that is not a success, `error` (with `code` and `retryable`; only
 * once final) and `next_action` naming `names.statusTool`. Absent fields are left out.
 */
export function operationView(record: OperationRecord, names?: FollowUpNames): JsonObject {
  const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  const outcome = outcomeOf(record, true, '');
  const view: Record<string, JsonValue | undefined> = {
    status: record.status,
    operation_id: record.operationId,
    operation: record.identity.operation,
    version: record.identity.version,
    workspace: record.identity.workspace,
    attempts: record.attemptCount,
    resource_id: record.resourceId,
    created_at: iso(record.createdAt),
    updated_at: iso(record.updatedAt),
    expires_at: iso(record.expiresAt),
    result: record.result,
    error: outcome.ok ? undefined : (errorContent(outcome.error).error as JsonValue),
    next_action: outcome.ok ? undefined : nextActionOf(outcome.error, names),
    resolved_by: record.resolvedBy,
    resolved_at: iso(record.resolvedAt),
  };
  if (isActive(record.status)) {
    view.error = undefined;
  }
  return Object.fromEntries(Object.entries(view).filter(([, v]) => v !== undefined)) as JsonObject;
}
