import type { Receipt, OperatorChange, OutboxMessage } from 'idem/store';
import type { JsonObject } from 'idem';
import { operationView } from 'idem/mcp';

/**
 * One operation as `idem ops show` prints it (and the console shows it): the status view a client
 * gets, plus the principal, the idempotency key and the audit. Never the arguments.
 */
export function showView(receipt: Receipt) {
  return {
    ...operationView(receipt),
    principal: receipt.identity.principal,
    idempotency_key: receipt.identity.key,
    ...(receipt.audit === undefined ? {} : { audit: receipt.audit.map(changeView) }),
  };
}

/** One operator change as `show` prints it (ISO time, snake_case like the rest). */
export function changeView(change: OperatorChange) {
  return {
    action: change.action,
    by: change.by,
    at: new Date(change.at).toISOString(),
    from: change.from,
    to: change.to,
    ...(change.reason === undefined ? {} : { reason: change.reason }),
    ...(change.resourceId === undefined ? {} : { resource_id: change.resourceId }),
    ...(change.previousError === undefined
      ? {}
      : { previous_error: { code: change.previousError.code, message: change.previousError.message } }),
    ...(change.previousResult === undefined ? {} : { previous_result: change.previousResult }),
  };
}

/** One outbox message as `idem ops dead-letters --json` prints it: never its payload (a body). */
export function messageView(message: OutboxMessage): JsonObject {
  const view: Record<string, string | number | undefined> = {
    id: message.id,
    dedup_key: message.dedupKey,
    destination: message.destination,
    attempts: message.attempts,
    last_error: message.lastError,
    created_at: iso(message.createdAt),
    dead_at: iso(message.deadAt),
  };
  return Object.fromEntries(Object.entries(view).filter(([, v]) => v !== undefined)) as JsonObject;
}

/** Epoch ms as ISO 8601, or undefined. */
export function iso(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
